package app

import "context"

// SetReadSecret makes a's hetzner provider read its token with read
// instead of Secret Manager, for tests.
func SetReadSecret(a *App, read func(ctx context.Context, version string) (string, error)) {
	a.readSecret = read
}
