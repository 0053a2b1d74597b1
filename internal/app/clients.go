package app

import (
	"context"
	"fmt"
	"sync"

	"cloud.google.com/go/firestore"
	"cloud.google.com/go/pubsub/v2"
	secretmanager "cloud.google.com/go/secretmanager/apiv1"
)

// Clients are the Google clients a process shares between its functions.
// Each is made on first use: the three functions run in one process locally
// and each alone in production, and a function should not dial a service it
// never calls. The clients honour FIRESTORE_EMULATOR_HOST and
// PUBSUB_EMULATOR_HOST by themselves.
type Clients struct {
	project string

	fsOnce sync.Once
	fs     *firestore.Client
	fsErr  error

	psOnce sync.Once
	ps     *pubsub.Client
	psErr  error

	smOnce sync.Once
	sm     *secretmanager.Client
	smErr  error
}

// NewClients returns the clients of project.
func NewClients(project string) *Clients { return &Clients{project: project} }

// Firestore returns the Firestore client of the (default) database.
func (c *Clients) Firestore(ctx context.Context) (*firestore.Client, error) {
	c.fsOnce.Do(func() {
		// The client must outlive the request that first asked for it.
		c.fs, c.fsErr = firestore.NewClient(context.WithoutCancel(ctx), c.project)
		if c.fsErr != nil {
			c.fsErr = fmt.Errorf("firestore client for project %s: %w", c.project, c.fsErr)
		}
	})
	return c.fs, c.fsErr
}

// PubSub returns the Pub/Sub client.
func (c *Clients) PubSub(ctx context.Context) (*pubsub.Client, error) {
	c.psOnce.Do(func() {
		c.ps, c.psErr = pubsub.NewClient(context.WithoutCancel(ctx), c.project)
		if c.psErr != nil {
			c.psErr = fmt.Errorf("pubsub client for project %s: %w", c.project, c.psErr)
		}
	})
	return c.ps, c.psErr
}

// SecretManager returns the Secret Manager client. It is made only when a
// spec names a cloudInitSecret, so a process that never reads one needs no
// credentials for it.
func (c *Clients) SecretManager(ctx context.Context) (*secretmanager.Client, error) {
	c.smOnce.Do(func() {
		c.sm, c.smErr = secretmanager.NewClient(context.WithoutCancel(ctx))
		if c.smErr != nil {
			c.smErr = fmt.Errorf("secret manager client: %w", c.smErr)
		}
	})
	return c.sm, c.smErr
}

// Close closes whatever clients were made.
func (c *Clients) Close() error {
	var errs []error
	if c.fs != nil {
		errs = append(errs, c.fs.Close())
	}
	if c.ps != nil {
		errs = append(errs, c.ps.Close())
	}
	if c.sm != nil {
		errs = append(errs, c.sm.Close())
	}
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
