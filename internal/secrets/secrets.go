// Package secrets reads cloud-init user-data from Secret Manager at
// reconcile time, so a user-data that holds credentials is never stored in
// Firestore or written to a log.
package secrets

import (
	"context"
	"fmt"

	secretmanager "cloud.google.com/go/secretmanager/apiv1"
	"cloud.google.com/go/secretmanager/apiv1/secretmanagerpb"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/egress-proxies/egress/internal/proxy"
)

// Error is a secret version that could not be read. Permanent ones (a
// version that does not exist, may not be read, or is disabled) fail the
// proxy that names it; any other is retried.
type Error struct {
	Version   string
	Permanent bool
	Err       error
}

func (e *Error) Error() string {
	return fmt.Sprintf("reading secret version %s: %v", e.Version, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// IsPermanent reports whether no retry can read the version: what the
// reconciler asks of the errors of its Secrets.
func (e *Error) IsPermanent() bool { return e.Permanent }

// Manager reads secret versions. It satisfies reconcile.Secrets.
type Manager struct {
	client *secretmanager.Client
}

// New returns a Manager over a Secret Manager client.
func New(client *secretmanager.Client) *Manager { return &Manager{client: client} }

// Access returns the payload of a secret version
// ("projects/P/secrets/S/versions/V"). A version that does not exist, may
// not be read or is disabled is a permanent *Error (the proxy fails, naming
// it); any other failure is one to retry.
func (m *Manager) Access(ctx context.Context, version string) (string, error) {
	if !proxy.IsSecretVersion(version) {
		return "", &Error{Version: version, Permanent: true,
			Err: fmt.Errorf("not a secret version name: want projects/PROJECT/secrets/SECRET/versions/VERSION")}
	}
	resp, err := m.client.AccessSecretVersion(ctx, &secretmanagerpb.AccessSecretVersionRequest{Name: version})
	if err != nil {
		switch status.Code(err) {
		case codes.NotFound, codes.PermissionDenied, codes.InvalidArgument, codes.FailedPrecondition, codes.Unauthenticated:
			return "", &Error{Version: version, Permanent: true, Err: err}
		}
		return "", &Error{Version: version, Err: err}
	}
	return string(resp.GetPayload().GetData()), nil
}
