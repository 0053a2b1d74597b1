package app

import (
	"context"

	"golang.org/x/oauth2"
)

// SetReadSecret makes a's clouds read their secrets (a token, the VM
// status key) with read instead of Secret Manager, for tests.
func SetReadSecret(a *App, read func(ctx context.Context, version string) (string, error)) {
	a.readSecret = read
}

// SetIDTokens makes a's clouds get their Google ID tokens from tokens
// instead of the metadata server, for tests.
func SetIDTokens(a *App, tokens func(ctx context.Context, audience string) (oauth2.TokenSource, error)) {
	a.idTokens = tokens
}
