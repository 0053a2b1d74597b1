// Package deploy holds the production setup as Terraform (deploy/terraform)
// and the tests that prove it matches the code: the module parses and has
// every block production needs, every name it shares with the code is the
// code's, the packaged source builds as the platform builds it, and each
// function's account holds exactly the permissions of the Google API
// calls its code makes. Its code is the table those calls are held to
// (iam.go): each API method with the permissions Google documents for
// it; and Terraform's alltrue (functions.go), which the tests here and a
// cloud's own test of its variables evaluate validations with.
package deploy
