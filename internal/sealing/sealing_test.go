package sealing_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"google.golang.org/api/option"

	"github.com/egress-proxies/egress/internal/sealing"
	"github.com/egress-proxies/egress/internal/sealing/kmsfake"
)

const key = "projects/demo/locations/us-central1/keyRings/egress-default/cryptoKeys/proxy-credentials"

// keysets is an in-memory KeysetStore with Firestore's create semantics.
type keysets struct {
	mu      sync.Mutex
	wrapped map[string][]byte
	kek     map[string]string
}

func (k *keysets) Keyset(_ context.Context, name string) ([]byte, string, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	w, ok := k.wrapped[name]
	if !ok {
		return nil, "", sealing.ErrNoKeyset
	}
	return w, k.kek[name], nil
}

func (k *keysets) CreateKeyset(_ context.Context, name string, wrapped []byte, kek string) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.wrapped == nil {
		k.wrapped, k.kek = map[string][]byte{}, map[string]string{}
	}
	if _, ok := k.wrapped[name]; ok {
		return sealing.ErrKeysetExists
	}
	k.wrapped[name], k.kek[name] = wrapped, kek
	return nil
}

func kmsKEK(t *testing.T, fake *kmsfake.Server, name string) sealing.KEK {
	t.Helper()
	kek, err := sealing.KMS(context.Background(), name, option.WithEndpoint(fake.URL), option.WithoutAuthentication())
	if err != nil {
		t.Fatal(err)
	}
	return kek
}

// TestKMSWrapsTheKeysetOnce: through the real Tink GCP KMS client against
// the fake KMS, the first process wraps a new keyset (one encrypt), a
// second one unwraps it (one decrypt) and opens what the first sealed, and
// a hundred passwords sealed and opened cost no further KMS call.
func TestKMSWrapsTheKeysetOnce(t *testing.T) {
	ctx := context.Background()
	fake := kmsfake.New(key)
	defer fake.Close()
	store := &keysets{}
	first := sealing.NewKeyring(kmsKEK(t, fake, key), store)
	sealed := map[string]string{}
	for i := range 100 {
		uid := "uid-" + string(rune('a'+i%26)) + strings.Repeat("x", i)
		s, err := first.Seal(ctx, "password-"+uid, uid)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(s, "password") {
			t.Fatalf("sealed %q shows the password", s)
		}
		sealed[uid] = s
	}
	second := sealing.NewKeyring(kmsKEK(t, fake, key), store)
	for uid, s := range sealed {
		got, err := second.Open(ctx, s, uid)
		if err != nil || got != "password-"+uid {
			t.Fatalf("Open(%s) = %q, %v; want %q", uid, got, err, "password-"+uid)
		}
	}
	if enc, dec := fake.Calls(); enc != 1 || dec != 1 {
		t.Errorf("KMS calls: %d encrypt, %d decrypt; want 1 and 1 (the keyset wrapped once, unwrapped once)", enc, dec)
	}
	if w, _, _ := store.Keyset(ctx, sealing.KeysetName); len(w) == 0 {
		t.Error("no wrapped keyset was stored")
	}
}

// TestSealedPasswordsAreBoundToTheirProxy: a sealed password copied into
// another proxy's document does not open there.
func TestSealedPasswordsAreBoundToTheirProxy(t *testing.T) {
	ctx := context.Background()
	k := sealing.NewKeyring(sealing.LocalKEK(), &keysets{})
	s, err := k.Seal(ctx, "secret0123456789", "uid-a")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := k.Open(ctx, s, "uid-b"); err == nil || !strings.Contains(err.Error(), "uid-b") {
		t.Errorf("Open under another uid: %v; want an error naming uid-b", err)
	}
	if got, err := k.Open(ctx, s, "uid-a"); err != nil || got != "secret0123456789" {
		t.Errorf("Open = %q, %v", got, err)
	}
}

// TestKeysetNeedsTheKey: without KMS's permission (an account that is not
// the API's or Reconcile's), or with another key, the keyset does not
// open, and the error says which key and why; a failure is not remembered.
func TestKeysetNeedsTheKey(t *testing.T) {
	ctx := context.Background()
	const other = "projects/demo/locations/us-central1/keyRings/egress-default/cryptoKeys/other"
	cases := map[string]struct {
		reason string
		kek    string
		deny   bool
		want   string
	}{
		"denied": {reason: "an account without cryptoKeyEncrypterDecrypter on the key", kek: key, deny: true,
			want: "cloud KMS key " + key + ": decrypt: googleapi: Error 403: Permission 'cloudkms.cryptoKeyVersions.useToDecrypt' denied"},
		"another key": {reason: "CREDENTIALS_KEY changed to a key that did not wrap the keyset", kek: other,
			want: "keysets/credentials is wrapped with key " + key + ", and CREDENTIALS_KEY is " + other},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			fake := kmsfake.New(key, other)
			defer fake.Close()
			store := &keysets{}
			sealed, err := sealing.NewKeyring(kmsKEK(t, fake, key), store).Seal(ctx, "p", "u")
			if err != nil {
				t.Fatal(err)
			}
			if tc.deny {
				fake.Deny(tc.kek)
			}
			_, err = sealing.NewKeyring(kmsKEK(t, fake, tc.kek), store).Open(ctx, sealed, "u")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%s: Open: %v; want an error with %q", tc.reason, err, tc.want)
			}
		})
	}
}

// TestKeysetFailureIsNotRemembered: a keyring that could not reach its
// keyset tries again on the next call.
func TestKeysetFailureIsNotRemembered(t *testing.T) {
	ctx := context.Background()
	fake := kmsfake.New(key)
	defer fake.Close()
	store := &keysets{}
	sealed, err := sealing.NewKeyring(kmsKEK(t, fake, key), store).Seal(ctx, "p0123456789abcdef", "u")
	if err != nil {
		t.Fatal(err)
	}
	k := sealing.NewKeyring(kmsKEK(t, fake, key), store)
	fake.Deny(key)
	if _, err := k.Open(ctx, sealed, "u"); err == nil {
		t.Fatal("Open with KMS denying: no error")
	}
	fake.Allow(key)
	if got, err := k.Open(ctx, sealed, "u"); err != nil || got != "p0123456789abcdef" {
		t.Errorf("Open once KMS allows it: %q, %v", got, err)
	}
}

func TestKMSRefusesWhatIsNoKeyName(t *testing.T) {
	for _, name := range []string{"", "local", "projects/p/keyRings/r/cryptoKeys/k", "gcp-kms://" + key} {
		if _, err := sealing.KMS(context.Background(), name); err == nil {
			t.Errorf("KMS(%q): no error", name)
		}
	}
}
