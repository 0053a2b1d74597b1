package app

import (
	"context"
	"fmt"
	"strings"
	"sync"

	secretmanager "cloud.google.com/go/secretmanager/apiv1"

	"github.com/egress-proxies/egress/internal/secrets"
)

// secretManager reads cloud-init from Secret Manager, dialling it on the
// first spec that names a secret, so a process that never reads one needs
// no credentials for it. A failed dial is not remembered: the next spec
// tries again.
//
// It reads no secret outside prefix (CLOUD_INIT_SECRET_PREFIX; empty reads
// none), whatever a document says: the API refuses such a spec, and the
// reconciler's IAM binding in Terraform is conditioned on the same prefix,
// so a document written around the API (or before the prefix narrowed)
// still cannot put another secret of the project into a VM's metadata.
type secretManager struct {
	prefix string

	mu     sync.Mutex
	client *secretmanager.Client
}

func (s *secretManager) Access(ctx context.Context, version string) (string, error) {
	if s.prefix == "" || !strings.HasPrefix(version, s.prefix) {
		// Permanent: no retry reads it; the proxy fails, naming it.
		return "", &secrets.Error{Version: version, Permanent: true,
			Err: fmt.Errorf("outside CLOUD_INIT_SECRET_PREFIX %q: this platform reads no such secret", s.prefix)}
	}
	s.mu.Lock()
	if s.client == nil {
		c, err := secretmanager.NewClient(context.WithoutCancel(ctx))
		if err != nil {
			s.mu.Unlock()
			return "", fmt.Errorf("secret manager client: %w", err)
		}
		s.client = c
	}
	c := s.client
	s.mu.Unlock()
	return secrets.New(c).Access(ctx, version)
}

func (s *secretManager) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.client == nil {
		return nil
	}
	return s.client.Close()
}
