// Package sealing encrypts what the store must keep secret, the proxies'
// passwords, with a key the readers of the database do not hold.
//
// It is envelope encryption in two layers, through Google's Tink library:
//
//   - a Tink keyset (AES-256-GCM) seals each password, bound to the uid of
//     the proxy it belongs to (associated data), so a sealed password copied
//     into another document does not open there;
//   - the keyset itself is kept in the database (keysets/credentials) only
//     wrapped by a key-encryption key, which in production is a Cloud KMS
//     key (CREDENTIALS_KEY) that only the ProxyAPI's and Reconcile's
//     accounts may use.
//
// A reader of the database (a project Viewer holds datastore.entities.get
// and list) sees the sealed passwords and the wrapped keyset, and can open
// neither without KMS's decrypt on that key. Each process unwraps the
// keyset once, on the first password it seals or opens, and seals and opens
// locally from then on: one KMS call per instance, not one per document
// read (a list of a hundred proxies shown with their proxyURLs costs no
// KMS call at all).
//
// Locally and in tests there is no KMS (Google ships no emulator of it):
// LocalKEK is a fixed key-encryption key, and the app refuses it on Cloud
// Run. The KMS path is tested all the same: KMS gives the real Tink GCP KMS
// client (REST), which the tests point at kmsfake, an httptest fake of the
// KMS REST API's encrypt and decrypt.
package sealing

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"regexp"
	"sync"
	"time"

	"github.com/tink-crypto/tink-go-gcpkms/v2/integration/gcpkms"
	"github.com/tink-crypto/tink-go/v2/aead"
	"github.com/tink-crypto/tink-go/v2/aead/subtle"
	"github.com/tink-crypto/tink-go/v2/keyset"
	"github.com/tink-crypto/tink-go/v2/tink"
	"google.golang.org/api/option"
)

// KeysetName is the name of the credentials' keyset in the KeysetStore
// (the document keysets/credentials).
const KeysetName = "credentials"

// ErrNoKeyset is what a KeysetStore's Keyset returns when none is stored.
var ErrNoKeyset = errors.New("no keyset is stored")

// ErrKeysetExists is what a KeysetStore's CreateKeyset returns when another
// process stored one first.
var ErrKeysetExists = errors.New("a keyset is stored already")

// KeysetStore keeps the wrapped keyset. Keyset returns ErrNoKeyset (wrapped
// or not) when there is none; CreateKeyset stores one only if there is none
// and returns ErrKeysetExists otherwise, so two processes that start at once
// agree on the first one's keyset.
type KeysetStore interface {
	Keyset(ctx context.Context, name string) (wrapped []byte, kek string, err error)
	CreateKeyset(ctx context.Context, name string, wrapped []byte, kek string) error
}

// KEK is a key-encryption key: the AEAD that wraps the keyset, and the name
// of the key it uses, kept beside the wrapped keyset so that an operator
// who changes CREDENTIALS_KEY is told which key the keyset needs.
type KEK struct {
	Name string
	AEAD tink.AEAD
}

// Keyring seals and opens passwords with the keyset of its KeysetStore,
// unwrapped by its KEK on first use. A failure to load the keyset is not
// remembered: the next call tries again. It is safe for concurrent use.
type Keyring struct {
	kek   KEK
	store KeysetStore

	// RotateEvery, when positive, is how old the keyset's primary key
	// may get before a load rotates it (RotationPeriod; rotate.go).
	RotateEvery time.Duration
	// Now is the clock of loads and rotations; time.Now when nil.
	Now func() time.Time

	// loading is held through a load from the store, so that the
	// instance's first uses make one KMS call, not one each.
	loading  sync.Mutex
	mu       sync.Mutex
	aead     tink.AEAD
	primary  uint32
	loadedAt time.Time
	// reloadedAt is when an Open that failed last read the keyset again.
	reloadedAt time.Time
}

// NewKeyring returns a Keyring over store, whose keyset kek wraps.
func NewKeyring(kek KEK, store KeysetStore) *Keyring {
	return &Keyring{kek: kek, store: store}
}

// keysetAssociatedData binds the wrapped keyset to its purpose: the KEK
// opens it only as the credentials' keyset.
var keysetAssociatedData = []byte("egress-proxies keysets/" + KeysetName)

// Seal encrypts a proxy's password for the proxy of uid, in the text form
// the store keeps (base64).
func (k *Keyring) Seal(ctx context.Context, password, uid string) (string, error) {
	return k.SealAs(ctx, PurposeCredentials, password, uid)
}

// Open decrypts what Seal made for the same uid.
func (k *Keyring) Open(ctx context.Context, sealed, uid string) (string, error) {
	return k.OpenAs(ctx, PurposeCredentials, sealed, uid)
}

// Purposes of what the keyring seals. Each is bound into the sealed value
// (associated data) with the proxy's uid, so a value sealed for one
// purpose opens for no other: a sealed console tail copied over a sealed
// password does not open as a password.
const (
	PurposeCredentials = "credentials"
	PurposeConsoleTail = "consoleTail"
)

// SealAs encrypts plaintext for purpose and the proxy of uid, in the text
// form the store keeps (base64).
func (k *Keyring) SealAs(ctx context.Context, purpose, plaintext, uid string) (string, error) {
	a, err := k.load(ctx)
	if err != nil {
		return "", err
	}
	ct, err := a.Encrypt([]byte(plaintext), associated(purpose, uid))
	if err != nil {
		return "", fmt.Errorf("sealing the %s of uid %s: %w", purpose, uid, err)
	}
	return base64.StdEncoding.EncodeToString(ct), nil
}

// OpenAs decrypts what SealAs made for the same purpose and uid.
func (k *Keyring) OpenAs(ctx context.Context, purpose, sealed, uid string) (string, error) {
	a, err := k.load(ctx)
	if err != nil {
		return "", err
	}
	ct, err := base64.StdEncoding.DecodeString(sealed)
	if err != nil {
		return "", fmt.Errorf("opening the %s of uid %s: it is not base64: %w", purpose, uid, err)
	}
	pt, err := a.Decrypt(ct, associated(purpose, uid))
	if err != nil && k.reload() {
		// Sealed with a key another process added since this one
		// loaded the keyset: read it again, once a minute at most.
		if a, lerr := k.load(ctx); lerr == nil {
			pt, err = a.Decrypt(ct, associated(purpose, uid))
		}
	}
	if err != nil {
		return "", fmt.Errorf("opening the %s of uid %s: it was not sealed for this uid with this keyset: %w", purpose, uid, err)
	}
	return string(pt), nil
}

// associated is what a sealed value is bound to. The credentials' form is
// the one every sealed password was made with.
func associated(purpose, uid string) []byte {
	return []byte("egress-proxies " + purpose + " uid=" + uid)
}

// load returns the keyset's AEAD: the one loaded before (for ReloadAfter),
// or the stored keyset unwrapped, or a new keyset, wrapped and stored. A
// load that reads the store rotates the keyset first when it is due
// (RotateEvery).
func (k *Keyring) load(ctx context.Context) (tink.AEAD, error) {
	now := k.now()
	if a := k.loaded(now); a != nil {
		return a, nil
	}
	k.loading.Lock()
	defer k.loading.Unlock()
	if a := k.loaded(now); a != nil {
		// Another goroutine loaded it meanwhile.
		return a, nil
	}
	h, err := k.read(ctx)
	if errors.Is(err, ErrNoKeyset) {
		h, err = k.create(ctx)
		if errors.Is(err, ErrKeysetExists) {
			// Another process stored one first: use it.
			h, err = k.read(ctx)
		}
	}
	if err != nil {
		return nil, err
	}
	if err := k.use(h, now); err != nil {
		return nil, err
	}
	if k.RotateEvery > 0 {
		// A rotation that fails leaves the keyset as it was, usable.
		_, _ = k.RotateIfDue(ctx, now, k.RotateEvery)
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.aead, nil
}

// loaded is the keyset loaded less than ReloadAfter before now, or nil.
func (k *Keyring) loaded(now time.Time) tink.AEAD {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.aead != nil && now.Sub(k.loadedAt) < ReloadAfter {
		return k.aead
	}
	return nil
}

func (k *Keyring) now() time.Time {
	if k.Now != nil {
		return k.Now()
	}
	return time.Now()
}

// reload reports whether an Open that failed may read the keyset again
// (once a minute at most), and forgets the loaded one if so.
func (k *Keyring) reload() bool {
	now := k.now()
	k.mu.Lock()
	defer k.mu.Unlock()
	if now.Sub(k.reloadedAt) < time.Minute {
		return false
	}
	k.reloadedAt, k.aead = now, nil
	return true
}

func (k *Keyring) read(ctx context.Context) (*keyset.Handle, error) {
	wrapped, kek, err := k.store.Keyset(ctx, KeysetName)
	if err != nil {
		return nil, err
	}
	h, err := keyset.ReadWithAssociatedData(keyset.NewBinaryReader(bytes.NewReader(wrapped)), k.kek.AEAD, keysetAssociatedData)
	if err != nil {
		if kek != k.kek.Name {
			return nil, fmt.Errorf("keysets/%s is wrapped with key %s, and CREDENTIALS_KEY is %s: set CREDENTIALS_KEY back to %s: %w", KeysetName, kek, k.kek.Name, kek, err)
		}
		return nil, fmt.Errorf("unwrapping keysets/%s with key %s: %w", KeysetName, k.kek.Name, err)
	}
	return h, nil
}

func (k *Keyring) create(ctx context.Context) (*keyset.Handle, error) {
	h, err := keyset.NewHandle(aead.AES256GCMKeyTemplate())
	if err != nil {
		return nil, fmt.Errorf("making keysets/%s: %w", KeysetName, err)
	}
	var buf bytes.Buffer
	if err := h.WriteWithAssociatedData(keyset.NewBinaryWriter(&buf), k.kek.AEAD, keysetAssociatedData); err != nil {
		return nil, fmt.Errorf("wrapping keysets/%s with key %s: %w", KeysetName, k.kek.Name, err)
	}
	if err := k.store.CreateKeyset(ctx, KeysetName, buf.Bytes(), k.kek.Name); err != nil {
		return nil, err
	}
	return h, nil
}

// kmsPrefix is how Tink names a Cloud KMS key.
const kmsPrefix = "gcp-kms://"

// KMS is the Cloud KMS key keyName
// (projects/P/locations/L/keyRings/R/cryptoKeys/K) as a key-encryption
// key, through Tink's GCP KMS client over KMS's REST API; opts reach that
// client (an endpoint, in tests). It makes the client on first use, as the
// app's other clients do, and tries again after a failure.
func KMS(ctx context.Context, keyName string, opts ...option.ClientOption) (KEK, error) {
	if !kmsKeyName.MatchString(keyName) {
		return KEK{}, fmt.Errorf("%q is not a Cloud KMS key name: want projects/PROJECT/locations/LOCATION/keyRings/RING/cryptoKeys/KEY", keyName)
	}
	return KEK{Name: keyName, AEAD: &kmsAEAD{ctx: context.WithoutCancel(ctx), key: keyName, opts: opts}}, nil
}

// kmsAEAD is a KMS key's AEAD, made on first use, that names the key in
// its errors.
type kmsAEAD struct {
	ctx  context.Context
	key  string
	opts []option.ClientOption

	mu   sync.Mutex
	aead tink.AEAD
}

func (k *kmsAEAD) get() (tink.AEAD, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.aead != nil {
		return k.aead, nil
	}
	c, err := gcpkms.NewClientWithOptions(k.ctx, kmsPrefix, k.opts...)
	if err != nil {
		return nil, fmt.Errorf("cloud KMS client: %w", err)
	}
	a, err := c.GetAEAD(kmsPrefix + k.key)
	if err != nil {
		return nil, fmt.Errorf("cloud KMS key %s: %w", k.key, err)
	}
	k.aead = a
	return a, nil
}

func (k *kmsAEAD) Encrypt(plaintext, associated []byte) ([]byte, error) {
	a, err := k.get()
	if err != nil {
		return nil, err
	}
	ct, err := a.Encrypt(plaintext, associated)
	if err != nil {
		return nil, fmt.Errorf("cloud KMS key %s: encrypt: %w", k.key, err)
	}
	return ct, nil
}

func (k *kmsAEAD) Decrypt(ciphertext, associated []byte) ([]byte, error) {
	a, err := k.get()
	if err != nil {
		return nil, err
	}
	pt, err := a.Decrypt(ciphertext, associated)
	if err != nil {
		return nil, fmt.Errorf("cloud KMS key %s: decrypt: %w", k.key, err)
	}
	return pt, nil
}

// LocalKEKName is the CREDENTIALS_KEY of the local stack and the tests.
const LocalKEKName = "local"

// LocalKEK is the local stack's and the tests' key-encryption key: fixed,
// so every process of a local run (and a test that reads what the stack
// wrote) opens the same keyset. It is no secret, and so never for a
// deployment: the app refuses it on Cloud Run.
func LocalKEK() KEK {
	key := sha256.Sum256([]byte("egress-proxies local key-encryption key: not a secret, never deployed"))
	a, err := subtle.NewAESGCM(key[:])
	if err != nil {
		panic(fmt.Sprintf("sealing: the local key: %v", err)) // a 32-byte key is always valid
	}
	return KEK{Name: LocalKEKName, AEAD: a}
}

// IsKMSKeyName reports whether s names a Cloud KMS key.
func IsKMSKeyName(s string) bool { return kmsKeyName.MatchString(s) }

// kmsKeyName is the form of a Cloud KMS key's resource name.
var kmsKeyName = regexp.MustCompile(`^projects/[^/]+/locations/[^/]+/keyRings/[^/]+/cryptoKeys/[^/]+$`)
