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

	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/proxy"
)

// Manager reads secret versions. It satisfies reconcile.Secrets.
type Manager struct {
	client *secretmanager.Client
}

// New returns a Manager over a Secret Manager client.
func New(client *secretmanager.Client) *Manager { return &Manager{client: client} }

// Access returns the payload of a secret version
// ("projects/P/secrets/S/versions/V"). Its errors are classified as the
// reconciler classifies a provider's: a version that does not exist, may not
// be read or is disabled is permanent (the proxy fails, naming it); any
// other is transient and retried.
func (m *Manager) Access(ctx context.Context, version string) (string, error) {
	const op = "access secret version"
	if !proxy.IsSecretVersion(version) {
		return "", provider.NewError(provider.KindPermanent, op, version,
			fmt.Errorf("not a secret version name: want projects/PROJECT/secrets/SECRET/versions/VERSION"))
	}
	resp, err := m.client.AccessSecretVersion(ctx, &secretmanagerpb.AccessSecretVersionRequest{Name: version})
	if err != nil {
		kind := provider.KindTransient
		switch status.Code(err) {
		case codes.NotFound, codes.PermissionDenied, codes.InvalidArgument, codes.FailedPrecondition, codes.Unauthenticated:
			kind = provider.KindPermanent
		case codes.ResourceExhausted:
			kind = provider.KindRateLimited
		}
		return "", provider.NewError(kind, op, version, err)
	}
	return string(resp.GetPayload().GetData()), nil
}
