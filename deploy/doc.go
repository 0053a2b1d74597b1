// Package deploy holds the production setup as Terraform (deploy/terraform)
// and the tests that prove it matches the code: the module parses and has
// every block production needs, every name it shares with the code is the
// code's, and the packaged source builds as the platform builds it. It has
// no code of its own.
package deploy
