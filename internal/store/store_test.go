package store_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"cloud.google.com/go/firestore"
	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/emulators/emulatortest"
	"github.com/egress-proxies/egress/internal/metering"
	"github.com/egress-proxies/egress/internal/proxy"
	"github.com/egress-proxies/egress/internal/sealing"
	"github.com/egress-proxies/egress/internal/store"
	"github.com/egress-proxies/egress/internal/store/rules"
	"github.com/egress-proxies/egress/internal/store/storetest"
	"github.com/egress-proxies/egress/internal/tenancy"
)

func TestMain(m *testing.M) { emulatortest.Main(m) }

// TestFirestoreStore runs the store contract against the Firestore
// emulator, one project per subtest.
func TestFirestoreStore(t *testing.T) {
	emulatortest.Firestore(t)
	storetest.Run(t, func(t *testing.T) storetest.Store {
		client, err := firestore.NewClient(context.Background(), emulatortest.ProjectID(t))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { client.Close() })
		return store.New(client, sealing.NewKeyring(sealing.LocalKEK(), sealing.Firestore{Client: client}))
	})
}

// TestUsageCounted checks the document reads and writes each operation
// counts in the invocation's usage, as Firestore bills them, against the
// emulator.
func TestUsageCounted(t *testing.T) {
	emulatortest.Firestore(t)
	cases := map[string]struct {
		reason string
		setup  func(t *testing.T, s *store.Store) *proxy.Proxy
		op     func(ctx context.Context, s *store.Store, p *proxy.Proxy) error
		want   metering.Usage
	}{
		"Create": {
			reason: "The transaction reads the counter and the name and writes both; nothing is read back.",
			op: func(ctx context.Context, s *store.Store, _ *proxy.Proxy) error {
				_, err := s.Create(ctx, storetest.New("a", "p1"), 20)
				return err
			},
			want: metering.Usage{FirestoreReads: 2, FirestoreWrites: 2},
		},
		"CreateTaken": {
			reason: "A name already taken costs the transaction's two reads and no write.",
			setup:  create("a", "p1"),
			op: func(ctx context.Context, s *store.Store, _ *proxy.Proxy) error {
				_, err := s.Create(ctx, storetest.New("a", "p1"), 20)
				return ignore(err, proxy.ErrAlreadyExists)
			},
			want: metering.Usage{FirestoreReads: 2},
		},
		"CreateInNamespace": {
			reason: "The namespace's one document gives admission, quota, count and the hour's creations: the same two reads and two writes as a Create.",
			setup:  namespace("a"),
			op: func(ctx context.Context, s *store.Store, _ *proxy.Proxy) error {
				_, err := s.CreateInNamespace(ctx, storetest.New("a", "p1"), func(ns *tenancy.Namespace) (tenancy.Limits, error) {
					return tenancy.Limits{Quota: ns.QuotaOr(20), CreatesPerHour: 60}, nil
				})
				return err
			},
			want: metering.Usage{FirestoreReads: 2, FirestoreWrites: 2},
		},
		"RequestRotation": {
			reason: "The transaction reads the namespace and the document, and writes the rotation time and the namespace's creations.",
			setup:  ready("a", "p1"),
			op: func(ctx context.Context, s *store.Store, p *proxy.Proxy) error {
				_, err := s.RequestRotation(ctx, p.Key(), time.Now(), tenancy.Limits{CreatesPerHour: 60, RotateMinInterval: 10 * time.Minute})
				return err
			},
			want: metering.Usage{FirestoreReads: 2, FirestoreWrites: 2},
		},
		"GetNamespace": {
			reason: "The API's access check is one read.",
			setup:  namespace("a"),
			op: func(ctx context.Context, s *store.Store, _ *proxy.Proxy) error {
				_, err := s.GetNamespace(ctx, "a")
				return err
			},
			want: metering.Usage{FirestoreReads: 1},
		},
		"UpdateNamespace": {
			reason: "The transaction reads the namespace and writes it.",
			setup:  namespace("a"),
			op: func(ctx context.Context, s *store.Store, _ *proxy.Proxy) error {
				_, err := s.UpdateNamespace(ctx, "a", func(ns *tenancy.Namespace) error { ns.Quota = 3; return nil })
				return err
			},
			want: metering.Usage{FirestoreReads: 1, FirestoreWrites: 1},
		},
		"GetMissing": {
			reason: "A get of a missing document is billed as a read.",
			op: func(ctx context.Context, s *store.Store, _ *proxy.Proxy) error {
				_, err := s.Get(ctx, proxy.Key{Namespace: "a", Name: "absent"})
				return ignore(err, proxy.ErrNotFound)
			},
			want: metering.Usage{FirestoreReads: 1},
		},
		"UpdateStatus": {
			reason: "A status write is one write and reads nothing: the precondition is checked by Firestore.",
			setup:  create("a", "p1"),
			op: func(ctx context.Context, s *store.Store, p *proxy.Proxy) error {
				p.Status.Phase = proxy.PhaseCreating
				_, err := s.UpdateStatus(ctx, p)
				return err
			},
			want: metering.Usage{FirestoreWrites: 1},
		},
		"RequestDeletion": {
			reason: "The transaction reads the document and writes it; nothing is read back.",
			setup:  create("a", "p1"),
			op: func(ctx context.Context, s *store.Store, p *proxy.Proxy) error {
				_, err := s.RequestDeletion(ctx, p.Key(), time.Now())
				return err
			},
			want: metering.Usage{FirestoreReads: 1, FirestoreWrites: 1},
		},
		"RequestDeletionAgain": {
			reason: "A repeated deletion request writes nothing.",
			setup: func(t *testing.T, s *store.Store) *proxy.Proxy {
				p := create("a", "p1")(t, s)
				if _, err := s.RequestDeletion(context.Background(), p.Key(), time.Now()); err != nil {
					t.Fatal(err)
				}
				return p
			},
			op: func(ctx context.Context, s *store.Store, p *proxy.Proxy) error {
				_, err := s.RequestDeletion(ctx, p.Key(), time.Now())
				return err
			},
			want: metering.Usage{FirestoreReads: 1},
		},
		"Delete": {
			reason: "The transaction deletes the document on its update time and uncounts it; it reads nothing.",
			setup:  create("a", "p1"),
			op: func(ctx context.Context, s *store.Store, p *proxy.Proxy) error {
				return s.Delete(ctx, p.Key(), p.UpdateTime)
			},
			want: metering.Usage{FirestoreWrites: 2},
		},
		"ListEmpty": {
			reason: "A query that returns nothing is billed one read.",
			op: func(ctx context.Context, s *store.Store, _ *proxy.Proxy) error {
				_, _, err := s.List(ctx, "a", 10, "")
				return err
			},
			want: metering.Usage{FirestoreReads: 1},
		},
		"LiveUIDs": {
			reason: "The projection reads every document once.",
			setup: func(t *testing.T, s *store.Store) *proxy.Proxy {
				create("a", "p1")(t, s)
				create("b", "p2")(t, s)
				return create("b", "p3")(t, s)
			},
			op: func(ctx context.Context, s *store.Store, _ *proxy.Proxy) error {
				_, err := s.LiveUIDs(ctx)
				return err
			},
			want: metering.Usage{FirestoreReads: 3},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			client, err := firestore.NewClient(context.Background(), emulatortest.ProjectID(t))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { client.Close() })
			s := store.New(client, sealing.NewKeyring(sealing.LocalKEK(), sealing.Firestore{Client: client}))
			var p *proxy.Proxy
			if tc.setup != nil {
				p = tc.setup(t, s)
			}
			ctx, inv := metering.Start(context.Background(), "Test")
			if err := tc.op(ctx, s, p); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, inv.Usage()); diff != "" {
				t.Errorf("%s\nusage (-want +got):\n%s", tc.reason, diff)
			}
		})
	}
}

// namespace is a setup that creates one namespace.
func namespace(name string) func(t *testing.T, s *store.Store) *proxy.Proxy {
	return func(t *testing.T, s *store.Store) *proxy.Proxy {
		t.Helper()
		if _, err := s.CreateNamespace(context.Background(), rules.NewNamespace(name, nil, 0, 20, time.Now())); err != nil {
			t.Fatal(err)
		}
		return nil
	}
}

// ready is a setup that creates one document, Ready.
func ready(ns, name string) func(t *testing.T, s *store.Store) *proxy.Proxy {
	return func(t *testing.T, s *store.Store) *proxy.Proxy {
		t.Helper()
		p := create(ns, name)(t, s)
		p.Status.Phase = proxy.PhaseReady
		var err error
		if p.UpdateTime, err = s.UpdateStatus(context.Background(), p); err != nil {
			t.Fatal(err)
		}
		return p
	}
}

// create is a setup that creates one document.
func create(ns, name string) func(t *testing.T, s *store.Store) *proxy.Proxy {
	return func(t *testing.T, s *store.Store) *proxy.Proxy {
		t.Helper()
		p, err := s.Create(context.Background(), storetest.New(ns, name), 20)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
}

func ignore(err, want error) error {
	if errors.Is(err, want) {
		return nil
	}
	if err == nil {
		return fmt.Errorf("no error, want %v", want)
	}
	return err
}
