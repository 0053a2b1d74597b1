package store_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/emulators/emulatortest"
	"github.com/egress-proxies/egress/internal/proxy"
	"github.com/egress-proxies/egress/internal/store/storetest"
)

// TestAccessCursors: a VM's cursor is kept by its providerID (slashes and
// all) and listed with the others, written over, and deleted (twice
// without error); a proxy is found by its uid with whether it keeps an
// access log and the VMs it names (status.providerID and
// reconciler.retiring), and a uid of no proxy is ErrNotFound.
func TestAccessCursors(t *testing.T) {
	emulatortest.Firestore(t)
	s, _ := sealedStore(t)
	ctx := context.Background()
	on := storetest.New("team", "web")
	off := storetest.New("team", "quiet")
	no := false
	off.Spec.AccessLog = &no
	var uids []string
	for _, p := range []*proxy.Proxy{on, off} {
		made, err := s.Create(ctx, p, 20)
		if err != nil {
			t.Fatal(err)
		}
		uids = append(uids, made.UID)
	}
	web, err := s.Get(ctx, proxy.Key{Namespace: "team", Name: "web"})
	if err != nil {
		t.Fatal(err)
	}
	web.Status.ProviderID, web.Reconciler.Retiring = "hcloud://1002", "hcloud://1001"
	if _, err := s.UpdateStatus(ctx, web); err != nil {
		t.Fatal(err)
	}
	for i, want := range []proxy.UIDProxy{
		{Key: proxy.Key{Namespace: "team", Name: "web"}, AccessLog: true, VMs: []string{"hcloud://1002", "hcloud://1001"}},
		{Key: proxy.Key{Namespace: "team", Name: "quiet"}, AccessLog: false},
	} {
		got, err := s.ProxyOfUID(ctx, uids[i])
		if diff := cmp.Diff(want, got); err != nil || diff != "" {
			t.Errorf("ProxyOfUID(%s) (%v) (-want +got):\n%s", uids[i], err, diff)
		}
	}
	if _, err := s.ProxyOfUID(ctx, "no-such-uid"); !errors.Is(err, proxy.ErrNotFound) {
		t.Errorf("ProxyOfUID of no proxy: %v, want ErrNotFound", err)
	}

	a := proxy.AccessCursor{Provider: "hetzner", ProviderID: "hcloud://1001", UID: uids[0], Namespace: "team", Name: "web", AccessLog: true, After: 7, Named: true}
	b := proxy.AccessCursor{Provider: "aws", ProviderID: "aws://eu-west-1/i-0abc", UID: uids[1], Namespace: "team", Name: "quiet"}
	for _, c := range []proxy.AccessCursor{a, b} {
		if err := s.PutAccessCursor(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	a.After = 1007
	if err := s.PutAccessCursor(ctx, a); err != nil {
		t.Fatal(err)
	}
	got, err := s.AccessCursors(ctx)
	if diff := cmp.Diff([]proxy.AccessCursor{b, a}, got); err != nil || diff != "" {
		t.Errorf("the cursors (%v) (-want +got):\n%s", err, diff)
	}
	for range 2 {
		if err := s.DeleteAccessCursor(ctx, b.ProviderID); err != nil {
			t.Errorf("deleting %s: %v", b.ProviderID, err)
		}
	}
	got, err = s.AccessCursors(ctx)
	if diff := cmp.Diff([]proxy.AccessCursor{a}, got); err != nil || diff != "" {
		t.Errorf("the cursors after a delete (%v) (-want +got):\n%s", err, diff)
	}
}
