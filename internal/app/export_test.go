package app

import (
	"context"

	"golang.org/x/oauth2"
)

// SetReadSecret makes a's hetzner provider read its token with read
// instead of Secret Manager, for tests.
func SetReadSecret(a *App, read func(ctx context.Context, version string) (string, error)) {
	a.readSecret = read
}

// SetIDTokens makes a's aws provider get its Google ID tokens from
// tokens instead of the metadata server, for tests.
func SetIDTokens(a *App, tokens func(ctx context.Context, audience string) (oauth2.TokenSource, error)) {
	a.idTokens = tokens
}
