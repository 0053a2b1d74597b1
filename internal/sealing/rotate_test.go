package sealing_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/internal/sealing"
	"github.com/egress-proxies/egress/internal/sealing/kmsfake"
)

// rotatable is keysets that can replace its keyset, as the Firestore
// store does: only over the keyset the rotation read.
type rotatable struct {
	keysets
	mu sync.Mutex
	at time.Time
}

func (r *rotatable) CreateKeyset(ctx context.Context, name string, wrapped []byte, kek string) error {
	if err := r.keysets.CreateKeyset(ctx, name, wrapped, kek); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.at = created
	return nil
}

func (r *rotatable) KeysetTime(context.Context, string) (time.Time, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.at, nil
}

func (r *rotatable) ReplaceKeyset(_ context.Context, name string, prev, wrapped []byte, kek string, at time.Time) error {
	r.keysets.mu.Lock()
	defer r.keysets.mu.Unlock()
	if string(r.wrapped[name]) != string(prev) {
		return sealing.ErrKeysetChanged
	}
	r.wrapped[name], r.kek[name] = wrapped, kek
	r.mu.Lock()
	defer r.mu.Unlock()
	r.at = at
	return nil
}

var created = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// TestKeysetRotation: a rotation adds a primary key and keeps the old
// ones: what was sealed before still opens, what is sealed after is sealed
// with the new key (the old values say Stale, the new do not), and a
// process that loaded the keyset before the rotation opens the new values
// (it reads the keyset again). The keyset is wrapped again through KMS
// (one more encrypt: the key's primary version of the day). A load
// rotates only when the keyset is older than the period; two processes
// that rotate at once leave one rotation.
func TestKeysetRotation(t *testing.T) {
	ctx := context.Background()
	fake := kmsfake.New(key)
	defer fake.Close()
	store := &rotatable{}
	now := created
	clock := func() time.Time { return now }
	a := sealing.NewKeyring(kmsKEK(t, fake, key), store)
	a.Now = clock
	b := sealing.NewKeyring(kmsKEK(t, fake, key), store)
	b.Now = clock
	old, err := a.Seal(ctx, "old-password-0123", "uid-a")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Open(ctx, old, "uid-a"); err != nil {
		t.Fatal(err)
	}
	wrappedBefore, _, _ := store.Keyset(ctx, sealing.KeysetName)
	encBefore, _ := fake.Calls()

	now = created.Add(time.Minute)
	if _, err := a.Rotate(ctx, now); err != nil {
		t.Fatalf("Rotate: %v", err)
	}
	wrappedAfter, _, _ := store.Keyset(ctx, sealing.KeysetName)
	encAfter, _ := fake.Calls()
	fresh, err := a.Seal(ctx, "new-password-0123", "uid-a")
	if err != nil {
		t.Fatal(err)
	}
	type state struct {
		Rewrapped, WrapEncrypts  int
		OldOpensInA, NewOpensInB string
		OldStale, NewStale       bool
	}
	got := state{WrapEncrypts: encAfter - encBefore, OldStale: a.Stale(old), NewStale: a.Stale(fresh)}
	if string(wrappedBefore) != string(wrappedAfter) {
		got.Rewrapped = 1
	}
	got.OldOpensInA = opened(a.Open(ctx, old, "uid-a"))
	// b loaded the keyset before the rotation, a minute and more ago.
	now = now.Add(2 * time.Minute)
	got.NewOpensInB = opened(b.Open(ctx, fresh, "uid-a"))
	want := state{Rewrapped: 1, WrapEncrypts: 1, OldOpensInA: "old-password-0123", NewOpensInB: "new-password-0123", OldStale: true, NewStale: false}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("a rotation (-want +got):\n%s", diff)
	}

	// Due or not: a load rotates only a keyset older than the period.
	for name, tc := range map[string]struct {
		age  time.Duration
		want bool
	}{
		"Young": {age: sealing.RotationPeriod - time.Hour, want: false},
		"Due":   {age: sealing.RotationPeriod + time.Hour, want: true},
	} {
		t.Run(name, func(t *testing.T) {
			at, _ := store.KeysetTime(ctx, sealing.KeysetName)
			rotated, err := a.RotateIfDue(ctx, at.Add(tc.age), sealing.RotationPeriod)
			if err != nil || rotated != tc.want {
				t.Errorf("RotateIfDue at age %s: %v, %v; want %v", tc.age, rotated, err, tc.want)
			}
		})
	}

	// Two at once: one replaces the keyset, the other is told it changed.
	prev, _, _ := store.Keyset(ctx, sealing.KeysetName)
	if err := store.ReplaceKeyset(ctx, sealing.KeysetName, []byte("not what is stored"), prev, key, now); !errors.Is(err, sealing.ErrKeysetChanged) {
		t.Errorf("a replace over another keyset: %v, want ErrKeysetChanged", err)
	}
}

func opened(s string, err error) string {
	if err != nil {
		return fmt.Sprintf("error: %v", err)
	}
	return s
}
