package storetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/internal/account"
	"github.com/egress-proxies/egress/internal/proxy"
)

// testAccounts: a put account reads back as written, with its create
// time; a second put replaces every field and keeps the create time;
// the list is ordered by id; a deleted account is gone, and deleting it
// again is no error.
func testAccounts(t *testing.T, s Store) {
	ctx := context.Background()
	if _, err := s.GetAccount(ctx, "second"); !errors.Is(err, proxy.ErrNotFound) {
		t.Errorf("GetAccount of an absent account: %v, want ErrNotFound", err)
	}
	if got, err := s.ListAccounts(ctx); err != nil || len(got) != 0 {
		t.Errorf("ListAccounts of an empty store: %v (%v), want none", got, err)
	}
	second := account.Account{ID: "second", Provider: "gcp", Settings: map[string]string{"GCP_PROJECT": "egress-2"},
		Regions: []string{"europe-west1", "us-east1"}, Limits: account.Limits{InstancesPerRegion: 5}, State: account.Active}
	at := base.Add(time.Hour)
	put, err := s.PutAccount(ctx, second, at)
	if err != nil {
		t.Fatalf("PutAccount: %v", err)
	}
	want := second
	want.CreateTime = at
	if diff := cmp.Diff(&want, put, ignoreUpdateTime); diff != "" || put.UpdateTime.IsZero() {
		t.Errorf("put account (-want +got), update time %s:\n%s", put.UpdateTime, diff)
	}
	got, err := s.GetAccount(ctx, "second")
	if err != nil {
		t.Fatalf("GetAccount: %v", err)
	}
	if diff := cmp.Diff(put, got); diff != "" {
		t.Errorf("GetAccount after PutAccount (-put +get):\n%s", diff)
	}

	drained := account.Account{ID: "second", Provider: "gcp", Settings: map[string]string{"GCP_PROJECT": "egress-3"}, State: account.Draining}
	replaced, err := s.PutAccount(ctx, drained, at.Add(time.Hour))
	if err != nil {
		t.Fatalf("PutAccount again: %v", err)
	}
	want = drained
	want.CreateTime = at
	if diff := cmp.Diff(&want, replaced, ignoreUpdateTime, equateEmpty); diff != "" || !replaced.UpdateTime.After(put.UpdateTime) {
		t.Errorf("replaced account (-want +got), update time %s after %s:\n%s", replaced.UpdateTime, put.UpdateTime, diff)
	}
	if got, err := s.GetAccount(ctx, "second"); err != nil || !cmp.Equal(replaced, got, equateEmpty) {
		t.Errorf("GetAccount after the second put: %+v (%v), want %+v", got, err, replaced)
	}

	first := account.Account{ID: "first", Provider: "mock", Settings: map[string]string{"MOCK_TOKEN_SECRET": "projects/p/secrets/s/versions/1"}, State: account.Active}
	if _, err := s.PutAccount(ctx, first, at); err != nil {
		t.Fatal(err)
	}
	list, err := s.ListAccounts(ctx)
	if err != nil {
		t.Fatalf("ListAccounts: %v", err)
	}
	var ids []string
	for _, a := range list {
		ids = append(ids, a.ID)
	}
	if diff := cmp.Diff([]string{"first", "second"}, ids); diff != "" {
		t.Errorf("ListAccounts ids (-want +got):\n%s", diff)
	}
	if _, err := s.PutAccount(ctx, account.Account{ID: "", Provider: "gcp", State: account.Active}, at); err == nil {
		t.Error("PutAccount of the default account's id: no error, want one (it has no document)")
	}

	for i := range 2 {
		if err := s.DeleteAccount(ctx, "second"); err != nil {
			t.Errorf("DeleteAccount #%d: %v", i+1, err)
		}
	}
	if _, err := s.GetAccount(ctx, "second"); !errors.Is(err, proxy.ErrNotFound) {
		t.Errorf("GetAccount of a deleted account: %v, want ErrNotFound", err)
	}
	if list, err := s.ListAccounts(ctx); err != nil || len(list) != 1 {
		t.Errorf("ListAccounts after a delete: %d accounts (%v), want 1", len(list), err)
	}
}

// testCountPlaced: the proxies of one type, account and region are
// counted, whatever their phase or namespace, and no other; the default
// account cannot be counted; the collector's claims carry the account.
func testCountPlaced(t *testing.T, s Store) {
	ctx := context.Background()
	mk := func(ns, name, typ, acct, region string) {
		t.Helper()
		p := New(ns, name)
		p.Spec.Provider, p.Spec.Placement.Region, p.Spec.Placement.Zone = typ, region, ""
		created, err := s.Create(ctx, p, 100)
		if err != nil {
			t.Fatal(err)
		}
		if acct == "" {
			return
		}
		created.Status.Phase, created.Status.Account = proxy.PhaseCreating, acct
		if _, err := s.UpdateStatus(ctx, created); err != nil {
			t.Fatal(err)
		}
	}
	mk("team-a", "one", "gcp", "second", "europe-west1")
	mk("team-b", "two", "gcp", "second", "europe-west1")
	mk("team-a", "three", "gcp", "second", "us-east1")
	mk("team-a", "four", "gcp", "third", "europe-west1")
	mk("team-a", "five", "mock", "second", "europe-west1")
	mk("team-a", "six", "gcp", "", "europe-west1")
	cases := map[string]struct {
		typ, acct, region string
		want              int
	}{
		"TwoNamespaces":  {"gcp", "second", "europe-west1", 2},
		"OtherRegion":    {"gcp", "second", "us-east1", 1},
		"OtherAccount":   {"gcp", "third", "europe-west1", 1},
		"OtherType":      {"mock", "second", "europe-west1", 1},
		"NoneInRegion":   {"gcp", "third", "us-east1", 0},
		"UnknownAccount": {"gcp", "fourth", "europe-west1", 0},
	}
	for name, tc := range cases {
		got, err := s.CountPlaced(ctx, tc.typ, tc.acct, tc.region)
		if err != nil || got != tc.want {
			t.Errorf("%s: CountPlaced(%s, %s, %s) = %d (%v), want %d", name, tc.typ, tc.acct, tc.region, got, err, tc.want)
		}
	}
	// The collector's claims say each VM's account.
	claims, err := s.LiveUIDs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	gotAccounts := map[string]string{}
	for _, c := range claims {
		gotAccounts[c.Key.Name] = c.Account
	}
	wantAccounts := map[string]string{"one": "second", "two": "second", "three": "second", "four": "third", "five": "second", "six": ""}
	if diff := cmp.Diff(wantAccounts, gotAccounts); diff != "" {
		t.Errorf("LiveUIDs' accounts by name (-want +got):\n%s", diff)
	}
	if _, err := s.CountPlaced(ctx, "gcp", account.Default, "europe-west1"); err == nil {
		t.Error("CountPlaced of the default account: no error, want one")
	}
}
