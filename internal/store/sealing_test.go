package store_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/firestore"

	"github.com/egress-proxies/egress/emulators/emulatortest"
	"github.com/egress-proxies/egress/internal/proxy"
	"github.com/egress-proxies/egress/internal/sealing"
	"github.com/egress-proxies/egress/internal/store"
	"github.com/egress-proxies/egress/internal/store/storetest"
	"github.com/egress-proxies/egress/internal/tenancy"
)

func sealedStore(t *testing.T) (*store.Store, *firestore.Client) {
	t.Helper()
	client, err := firestore.NewClient(context.Background(), emulatortest.ProjectID(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	return store.New(client, sealing.NewKeyring(sealing.LocalKEK(), sealing.Firestore{Client: client})), client
}

// createSealed creates proxy team/name with credentials through s.
func createSealed(t *testing.T, s *store.Store, name string) (*proxy.Proxy, proxy.Credentials) {
	t.Helper()
	p := storetest.New("team", name)
	creds, _ := proxy.NewCredentials()
	p.Reconciler.Credentials = creds
	if _, err := s.Create(context.Background(), p, 20); err != nil {
		t.Fatal(err)
	}
	return p, creds
}

// credentialsField is what the document holds under
// reconciler.credentials, as Firestore has it.
func credentialsField(t *testing.T, client *firestore.Client, p *proxy.Proxy) map[string]any {
	t.Helper()
	snap, err := client.Doc(p.Key().Path()).Get(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	v, err := snap.DataAt("reconciler.credentials")
	if err != nil {
		t.Fatal(err)
	}
	return v.(map[string]any)
}

// TestPasswordsAreSealed: every way the store writes credentials (a
// create, a status update, a rotation) leaves the password sealed in the
// document and readable through the store; a process without the key (the
// collector's store) reads the document but not the password, and refuses
// to write new credentials it could only lose.
func TestPasswordsAreSealed(t *testing.T) {
	emulatortest.Firestore(t)
	ctx := context.Background()
	s, client := sealedStore(t)
	p := storetest.New("team", "sealed")
	creds, _ := proxy.NewCredentials()
	p.Reconciler.Credentials = creds
	if _, err := s.Create(ctx, p, 20); err != nil {
		t.Fatal(err)
	}
	check := func(when, want string) *proxy.Proxy {
		t.Helper()
		got, err := s.Get(ctx, p.Key())
		if err != nil {
			t.Fatal(err)
		}
		if got.Reconciler.Credentials.Password != want {
			t.Errorf("%s: the store reads password %q, want %q", when, got.Reconciler.Credentials.Password, want)
		}
		stored := credentialsField(t, client, p)
		if _, clear := stored["password"]; clear || stored["sealedPassword"] == nil || strings.Contains(stored["sealedPassword"].(string), want) {
			t.Errorf("%s: the document holds %v, want the password sealed only", when, stored)
		}
		return got
	}
	got := check("after a create", creds.Password)

	got.Status.Message = "changed"
	if _, err := s.UpdateStatus(ctx, got); err != nil {
		t.Fatal(err)
	}
	check("after a status update", creds.Password)

	rotated, err := s.RotateCredentials(ctx, p.Key(), time.Now(), tenancy.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if rotated.Reconciler.Credentials.Password == creds.Password {
		t.Fatal("the rotation kept the password")
	}
	check("after a rotation", rotated.Reconciler.Credentials.Password)

	keyless := store.New(client, nil)
	read, err := keyless.Get(ctx, p.Key())
	if err != nil {
		t.Fatalf("the collector's store reads the document: %v", err)
	}
	if read.Reconciler.Credentials.Password != "" {
		t.Error("a store without the key opened the password")
	}
	if _, err := keyless.RotateCredentials(ctx, p.Key(), time.Now(), tenancy.Limits{}); err == nil || !strings.Contains(err.Error(), "no key to seal them with") {
		t.Errorf("a rotation without the key: %v, want a refusal that writes nothing", err)
	}
	check("after the keyless store's refused rotation", rotated.Reconciler.Credentials.Password)
}

// TestPlaintextDocumentIsResealed: a document written before sealing, its
// password in reconciler.credentials.password, still works, and its first
// read writes it back sealed.
func TestPlaintextDocumentIsResealed(t *testing.T) {
	emulatortest.Firestore(t)
	ctx := context.Background()
	s, client := sealedStore(t)
	p := storetest.New("team", "legacy")
	if _, err := s.Create(ctx, p, 20); err != nil {
		t.Fatal(err)
	}
	const user, pass = "olduser", "OldPassword0123456789abc"
	if _, err := client.Doc(p.Key().Path()).Update(ctx, []firestore.Update{
		{Path: "reconciler.credentials", Value: map[string]any{"username": user, "password": pass}},
	}); err != nil {
		t.Fatal(err)
	}
	got, err := s.Get(ctx, p.Key())
	if err != nil {
		t.Fatal(err)
	}
	if c := got.Reconciler.Credentials; c.Username != user || c.Password != pass {
		t.Errorf("the old document reads as %s / %q, want %s / %q", c, c.Password, user, pass)
	}
	stored := credentialsField(t, client, p)
	if _, clear := stored["password"]; clear || stored["sealedPassword"] == nil || stored["username"] != user {
		t.Errorf("after the read, the document holds %v: want the password sealed, and no longer in clear", stored)
	}
	again, err := s.Get(ctx, p.Key())
	if err != nil || again.Reconciler.Credentials.Password != pass {
		t.Errorf("the resealed document reads as %q, %v; want %q", again.Reconciler.Credentials.Password, err, pass)
	}
}

// TestRotatedKeysetResealsOnRead: after the keyset gains a new primary key
// (sealing.Keyring.Rotate), a password sealed with the old key still opens,
// and the first Get writes it back sealed with the new one; the keyset
// document says when it was rotated, and a second process opens both.
func TestRotatedKeysetResealsOnRead(t *testing.T) {
	emulatortest.Firestore(t)
	ctx := context.Background()
	client, err := firestore.NewClient(ctx, emulatortest.ProjectID(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	keys := sealing.Firestore{Client: client}
	kr := sealing.NewKeyring(sealing.LocalKEK(), keys)
	s := store.New(client, kr)
	p, creds := createSealed(t, s, "rotated")
	before := credentialsField(t, client, p)["sealedPassword"].(string)
	made, err := keys.KeysetTime(ctx, sealing.KeysetName)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kr.Rotate(ctx, made.Add(sealing.RotationPeriod)); err != nil {
		t.Fatalf("Rotate: %v", err)
	}
	if !kr.Stale(before) {
		t.Error("the password sealed before the rotation is not stale")
	}
	got, err := s.Get(ctx, p.Key())
	if err != nil || got.Reconciler.Credentials.Password != creds.Password {
		t.Fatalf("Get after the rotation: %v, %v", got, err)
	}
	after := credentialsField(t, client, p)["sealedPassword"].(string)
	if after == before || kr.Stale(after) {
		t.Errorf("the first Get after the rotation left the password sealed with the old key")
	}
	if at, err := keys.KeysetTime(ctx, sealing.KeysetName); err != nil || !at.Equal(made.Add(sealing.RotationPeriod)) {
		t.Errorf("the keyset's time after the rotation: %s, %v; want %s", at, err, made.Add(sealing.RotationPeriod))
	}
	other := sealing.NewKeyring(sealing.LocalKEK(), keys)
	for what, sealed := range map[string]string{"old": before, "new": after} {
		if pw, err := other.Open(ctx, sealed, p.UID); err != nil || pw != creds.Password {
			t.Errorf("another process opens the %s sealed password: %q, %v", what, pw, err)
		}
	}
}

// TestLostKeyRecoversByRotateCredentials: with the keyset gone (the KMS
// key lost: the document keysets/credentials deleted, a new keyset made),
// a proxy's sealed password opens no more and a Get fails; its sealed
// console tail is shown no more; :rotateCredentials still gives the proxy
// new credentials, sealed with the new keyset, which a Get then opens
// (docs/operations/key-rotation.md).
func TestLostKeyRecoversByRotateCredentials(t *testing.T) {
	emulatortest.Firestore(t)
	ctx := context.Background()
	s, client := sealedStore(t)
	p, creds := createSealed(t, s, "lost")
	got, err := s.Get(ctx, p.Key())
	if err != nil {
		t.Fatal(err)
	}
	got.Status.Phase, got.Status.ConsoleTail = proxy.PhaseReady, []string{"a line"}
	if _, err := s.UpdateStatus(ctx, got); err != nil {
		t.Fatal(err)
	}
	if _, err := client.Collection(sealing.KeysetsCollection).Doc(sealing.KeysetName).Delete(ctx); err != nil {
		t.Fatal(err)
	}
	after := store.New(client, sealing.NewKeyring(sealing.LocalKEK(), sealing.Firestore{Client: client}))
	if _, err := after.Get(ctx, p.Key()); err == nil || !strings.Contains(err.Error(), "opening the credentials") {
		t.Fatalf("Get with the keyset lost: %v, want the credentials not opened", err)
	}
	rotated, err := after.RotateCredentials(ctx, p.Key(), time.Now(), tenancy.Limits{})
	if err != nil {
		t.Fatalf("RotateCredentials with the keyset lost: %v, want new credentials", err)
	}
	read, err := after.Get(ctx, p.Key())
	if err != nil {
		t.Fatalf("Get after the new credentials: %v", err)
	}
	if read.Reconciler.Credentials.Password != rotated.Reconciler.Credentials.Password || read.Reconciler.Credentials.Password == creds.Password || len(read.Status.ConsoleTail) != 0 {
		t.Errorf("after :rotateCredentials: password %q (rotation said %q, old %q), tail %q; want the new password and no tail",
			read.Reconciler.Credentials.Password, rotated.Reconciler.Credentials.Password, creds.Password, read.Status.ConsoleTail)
	}
}
