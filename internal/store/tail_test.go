package store_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/emulators/emulatortest"
	"github.com/egress-proxies/egress/internal/proxy"
	"github.com/egress-proxies/egress/internal/store"
)

// TestConsoleTailIsSealed: a Failed proxy's console tail (what its VM's
// software printed, which a custom cloud-init controls) is shown by the
// API to editors only, so the document keeps it sealed as it keeps the
// password: a project Viewer reading Firestore sees neither a line of it
// nor the field in clear; the store reads it back; the collector's
// store, without the key, reads no tail and keeps the sealed one when it
// writes; a tail cleared is gone from the document.
func TestConsoleTailIsSealed(t *testing.T) {
	emulatortest.Firestore(t)
	ctx := context.Background()
	s, client := sealedStore(t)
	p, _ := createSealed(t, s, "tail")
	got, err := s.Get(ctx, p.Key())
	if err != nil {
		t.Fatal(err)
	}
	tail := []string{"cloud-init: token=hunter2-internal", "cloud-init: giving up"}
	got.Status.Phase, got.Status.ConsoleTail = proxy.PhaseFailed, tail
	if _, err := s.UpdateStatus(ctx, got); err != nil {
		t.Fatal(err)
	}
	raw := func() string {
		snap, err := client.Doc(p.Key().Path()).Get(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return fmt.Sprint(snap.Data())
	}
	if doc := raw(); strings.Contains(doc, "hunter2") || strings.Contains(doc, "consoleTail:") {
		t.Errorf("the document holds the console tail in clear:\n%s", doc)
	}
	read, err := s.Get(ctx, p.Key())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(tail, read.Status.ConsoleTail); diff != "" {
		t.Errorf("the store reads the tail (-want +got):\n%s", diff)
	}

	keyless := store.New(client, nil)
	k, err := keyless.Get(ctx, p.Key())
	if err != nil {
		t.Fatal(err)
	}
	if len(k.Status.ConsoleTail) != 0 {
		t.Errorf("a store without the key opened the tail: %q", k.Status.ConsoleTail)
	}
	k.Status.Message = "written by the collector"
	if _, err := keyless.UpdateStatus(ctx, k); err != nil {
		t.Fatal(err)
	}
	read, err = s.Get(ctx, p.Key())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(tail, read.Status.ConsoleTail); diff != "" {
		t.Errorf("the tail after the keyless store's write (-want +got):\n%s", diff)
	}

	read.Status.ConsoleTail = nil
	if _, err := s.UpdateStatus(ctx, read); err != nil {
		t.Fatal(err)
	}
	if read, err = s.Get(ctx, p.Key()); err != nil || len(read.Status.ConsoleTail) != 0 {
		t.Errorf("a cleared tail reads back as %q (%v), want none", read.Status.ConsoleTail, err)
	}
	if doc := raw(); strings.Contains(doc, "onsoleTail") {
		t.Errorf("a cleared tail is still in the document:\n%s", doc)
	}
}
