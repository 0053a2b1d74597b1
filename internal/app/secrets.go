package app

import (
	"context"
	"fmt"
	"sync"

	secretmanager "cloud.google.com/go/secretmanager/apiv1"

	"github.com/egress-proxies/egress/internal/secrets"
)

// secretManager reads cloud-init from Secret Manager, dialling it on the
// first spec that names a secret, so a process that never reads one needs
// no credentials for it. A failed dial is not remembered: the next spec
// tries again.
type secretManager struct {
	mu     sync.Mutex
	client *secretmanager.Client
}

func (s *secretManager) Access(ctx context.Context, version string) (string, error) {
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
