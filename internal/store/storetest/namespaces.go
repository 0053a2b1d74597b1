package storetest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/egress-proxies/egress/internal/proxy"
	"github.com/egress-proxies/egress/internal/store/rules"
	"github.com/egress-proxies/egress/internal/tenancy"
)

// Emails of the namespace tests.
const (
	alice = "alice@example.com"
	bob   = "bob@example.com"
	carol = "carol@example.com"
)

var equateEmpty = cmpopts.EquateEmpty()

// testPageTokens: a token no list made is refused by both lists, as
// proxy.ErrInvalidPageToken, never taken as a name to start after.
func testPageTokens(t *testing.T, s Store) {
	ctx := context.Background()
	for i := range 3 {
		if _, err := s.Create(ctx, New("team-t", fmt.Sprintf("p-%d", i)), 20); err != nil {
			t.Fatal(err)
		}
	}
	cases := map[string]string{
		"NotBase64":       "!!",
		"NotALabel":       rules.PageToken("Not_A_Label"),
		"RawName":         "p-0/",
		"PaddedBase64URL": "cC0w==",
	}
	for name, token := range cases {
		t.Run(name, func(t *testing.T) {
			if _, _, err := s.List(ctx, "team-t", 2, token); !errors.Is(err, proxy.ErrInvalidPageToken) {
				t.Errorf("List with page token %q: %v, want ErrInvalidPageToken", token, err)
			}
			if _, _, err := s.ListNamespaces(ctx, "", 2, token); !errors.Is(err, proxy.ErrInvalidPageToken) {
				t.Errorf("ListNamespaces with page token %q: %v, want ErrInvalidPageToken", token, err)
			}
		})
	}
	_, next, err := s.List(ctx, "team-t", 2, "")
	if err != nil || next == "" {
		t.Fatalf("first page: token %q, %v; want a token", next, err)
	}
	page, _, err := s.List(ctx, "team-t", 2, next)
	if err != nil || len(page) != 1 || page[0].Name != "p-2" {
		t.Errorf("the page after %q: %v, %v; want p-2 alone", next, page, err)
	}
}

func testNamespaces(t *testing.T, s Store) {
	ctx := context.Background()
	ns := rules.NewNamespace("team-a", map[string]tenancy.Role{alice: tenancy.Owner, bob: tenancy.Viewer}, 0, 20, base)
	created, err := s.CreateNamespace(ctx, ns)
	if err != nil {
		t.Fatalf("CreateNamespace: %v", err)
	}
	want := &tenancy.Namespace{Name: "team-a", Members: ns.Members, MemberEmails: []string{alice, bob}, Quota: 20, CreateTime: base}
	if diff := cmp.Diff(want, created, ignoreUpdateTime, equateEmpty); diff != "" {
		t.Errorf("created namespace (-want +got):\n%s", diff)
	}
	if created.UpdateTime.IsZero() {
		t.Error("CreateNamespace returned no update time")
	}
	got, err := s.GetNamespace(ctx, "team-a")
	if err != nil {
		t.Fatalf("GetNamespace: %v", err)
	}
	if diff := cmp.Diff(created, got, equateEmpty); diff != "" {
		t.Errorf("GetNamespace after CreateNamespace (-create +get):\n%s", diff)
	}
	other := rules.NewNamespace("team-a", nil, 3, 20, base)
	existing, err := s.CreateNamespace(ctx, other)
	if !errors.Is(err, tenancy.ErrNamespaceExists) {
		t.Fatalf("second CreateNamespace: %v, want ErrNamespaceExists", err)
	}
	if diff := cmp.Diff(got, existing, equateEmpty); diff != "" {
		t.Errorf("second CreateNamespace returned (-the existing namespace +got):\n%s", diff)
	}
	if _, err := s.GetNamespace(ctx, "absent"); !errors.Is(err, tenancy.ErrNamespaceNotFound) {
		t.Errorf("GetNamespace of an absent namespace: %v, want ErrNamespaceNotFound", err)
	}

	updated, err := s.UpdateNamespace(ctx, "team-a", func(ns *tenancy.Namespace) error {
		delete(ns.Members, bob)
		ns.Members[carol] = tenancy.Editor
		ns.Quota = 5
		return nil
	})
	if err != nil {
		t.Fatalf("UpdateNamespace: %v", err)
	}
	want = &tenancy.Namespace{Name: "team-a", Members: map[string]tenancy.Role{alice: tenancy.Owner, carol: tenancy.Editor},
		MemberEmails: []string{alice, carol}, Quota: 5, CreateTime: base}
	if diff := cmp.Diff(want, updated, ignoreUpdateTime, equateEmpty); diff != "" {
		t.Errorf("updated namespace (-want +got):\n%s", diff)
	}
	if got, err := s.GetNamespace(ctx, "team-a"); err != nil {
		t.Fatal(err)
	} else if diff := cmp.Diff(updated, got, equateEmpty); diff != "" {
		t.Errorf("UpdateNamespace returned what a Get does not read (-returned +get):\n%s", diff)
	}
	refused := errors.New("refused")
	if _, err := s.UpdateNamespace(ctx, "team-a", func(ns *tenancy.Namespace) error { ns.Quota = 99; return refused }); !errors.Is(err, refused) {
		t.Errorf("UpdateNamespace whose update fails: %v, want its error", err)
	}
	if got, err := s.GetNamespace(ctx, "team-a"); err != nil || got.Quota != 5 {
		t.Errorf("after a failed update: quota %v (%v), want 5 unchanged", got, err)
	}
	var saw []*tenancy.Namespace
	_, err = s.UpdateNamespace(ctx, "absent", func(ns *tenancy.Namespace) error { saw = append(saw, ns); return nil })
	if !errors.Is(err, tenancy.ErrNamespaceNotFound) || len(saw) == 0 || saw[0] != nil {
		t.Errorf("UpdateNamespace of an absent namespace: %v, update saw %v; want ErrNamespaceNotFound after update saw nil", err, saw)
	}
	if _, err := s.GetNamespace(ctx, "absent"); !errors.Is(err, tenancy.ErrNamespaceNotFound) {
		t.Errorf("UpdateNamespace of an absent namespace made it: %v", err)
	}

	// A namespace from before tenancy is only its counter: it exists, with
	// no members and no quota of its own.
	if _, err := s.Create(ctx, New("legacy", "p"), 20); err != nil {
		t.Fatal(err)
	}
	legacy, err := s.GetNamespace(ctx, "legacy")
	if err != nil {
		t.Fatalf("GetNamespace of a namespace made by a proxy's Create: %v", err)
	}
	if diff := cmp.Diff(&tenancy.Namespace{Name: "legacy", ProxyCount: 1, ProxyCreates: 1}, legacy, ignoreUpdateTime, equateEmpty); diff != "" {
		t.Errorf("the counter's namespace (-want +got):\n%s", diff)
	}
}

func testNamespaceList(t *testing.T, s Store) {
	ctx := context.Background()
	var all, alices []string
	for i := range 7 {
		name := fmt.Sprintf("ns-%d", i)
		members := map[string]tenancy.Role{bob: tenancy.Viewer}
		if i%2 == 0 {
			members[alice] = tenancy.Editor
			alices = append(alices, name)
		}
		if _, err := s.CreateNamespace(ctx, rules.NewNamespace(name, members, 0, 20, base)); err != nil {
			t.Fatal(err)
		}
		all = append(all, name)
	}
	cases := map[string]struct {
		reason string
		member string
		size   int
		want   []string
		pages  int
	}{
		"Everyone": {reason: "an admin's list holds every namespace, in pages", size: 3, want: all, pages: 3},
		"Member":   {reason: "a member's list holds only their namespaces", member: alice, size: 2, want: alices, pages: 2},
		"NoOne":    {reason: "someone in no namespace lists none", member: carol, size: 2, want: nil, pages: 1},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var got []string
			pages := 0
			for token := ""; ; {
				page, next, err := s.ListNamespaces(ctx, tc.member, tc.size, token)
				if err != nil {
					t.Fatalf("ListNamespaces: %v", err)
				}
				pages++
				for _, ns := range page {
					got = append(got, ns.Name)
				}
				if token = next; token == "" || pages > 10 {
					break
				}
			}
			if diff := cmp.Diff(tc.want, got, equateEmpty); diff != "" || pages != tc.pages {
				t.Errorf("%s: %d pages, want %d; names (-want +got):\n%s", tc.reason, pages, tc.pages, diff)
			}
		})
	}
}

func testCreateInNamespace(t *testing.T, s Store) {
	ctx := context.Background()
	refused := errors.New("refused")
	var saw []*tenancy.Namespace
	record := func(quota int, err error) tenancy.Admission {
		return func(ns *tenancy.Namespace) (tenancy.Limits, error) {
			saw = append(saw, ns)
			return tenancy.Limits{Quota: quota}, err
		}
	}
	if _, err := s.CreateInNamespace(ctx, New("ghost", "p"), record(5, refused)); !errors.Is(err, refused) {
		t.Errorf("a create admit refuses: %v, want admit's error", err)
	}
	if _, err := s.CreateInNamespace(ctx, New("ghost", "p"), record(5, nil)); !errors.Is(err, tenancy.ErrNamespaceNotFound) {
		t.Errorf("a create in a namespace that does not exist: %v, want ErrNamespaceNotFound", err)
	}
	if len(saw) == 0 || saw[len(saw)-1] != nil {
		t.Errorf("admit saw %v for a namespace that does not exist, want nil", saw)
	}
	if _, err := s.Get(ctx, proxy.Key{Namespace: "ghost", Name: "p"}); !errors.Is(err, proxy.ErrNotFound) {
		t.Errorf("a refused create wrote the proxy: %v", err)
	}
	if _, err := s.GetNamespace(ctx, "ghost"); !errors.Is(err, tenancy.ErrNamespaceNotFound) {
		t.Errorf("a refused create made the namespace: %v", err)
	}

	if _, err := s.CreateNamespace(ctx, rules.NewNamespace("team-n", map[string]tenancy.Role{alice: tenancy.Editor}, 2, 20, base)); err != nil {
		t.Fatal(err)
	}
	byQuota := func(ns *tenancy.Namespace) (tenancy.Limits, error) {
		saw = append(saw, ns)
		return tenancy.Limits{Quota: ns.QuotaOr(20)}, nil
	}
	for i := range 2 {
		if _, err := s.CreateInNamespace(ctx, New("team-n", fmt.Sprintf("p-%d", i)), byQuota); err != nil {
			t.Fatalf("create %d of a quota of 2: %v", i, err)
		}
	}
	if got := saw[len(saw)-1]; got == nil || got.RoleOf(alice) != tenancy.Editor || got.ProxyCount != 1 {
		t.Errorf("admit saw %+v, want the namespace with its members and the one proxy it held", got)
	}
	if _, err := s.CreateInNamespace(ctx, New("team-n", "p-2"), byQuota); !errors.Is(err, proxy.ErrQuotaExceeded) {
		t.Errorf("a create past the namespace's own quota: %v, want ErrQuotaExceeded", err)
	}
	existing, err := s.CreateInNamespace(ctx, New("team-n", "p-0"), byQuota)
	if !errors.Is(err, proxy.ErrAlreadyExists) || existing == nil || existing.Name != "p-0" {
		t.Errorf("a create of a taken name: %v, %v; want ErrAlreadyExists and the existing document", existing, err)
	}
	if _, err := s.CreateInNamespace(ctx, New("team-n", "p-9"), record(20, refused)); !errors.Is(err, refused) {
		t.Errorf("a create admit refuses in an existing namespace: %v, want admit's error", err)
	}
	if ns, err := s.GetNamespace(ctx, "team-n"); err != nil || ns.ProxyCount != 2 {
		t.Errorf("namespace after two creates and three refusals: %+v, %v; want a count of 2", ns, err)
	}
}

func testNamespaceDeletion(t *testing.T, s Store) {
	ctx := context.Background()
	if _, err := s.CreateNamespace(ctx, rules.NewNamespace("team-d", nil, 0, 20, base)); err != nil {
		t.Fatal(err)
	}
	admit := func(ns *tenancy.Namespace) (tenancy.Limits, error) { return tenancy.Limits{Quota: ns.QuotaOr(20)}, nil }
	var docs []*proxy.Proxy
	for i := range 2 {
		p, err := s.CreateInNamespace(ctx, New("team-d", fmt.Sprintf("p-%d", i)), admit)
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, p)
	}
	var saw []*tenancy.Namespace
	check := func(ns *tenancy.Namespace) error { saw = append(saw, ns); return nil }
	if err := s.DeleteNamespace(ctx, "team-d", check); !errors.Is(err, tenancy.ErrNamespaceNotEmpty) {
		t.Errorf("DeleteNamespace of a namespace of two proxies: %v, want ErrNamespaceNotEmpty", err)
	}
	if len(saw) == 0 || saw[0] == nil || saw[0].ProxyCount != 2 {
		t.Errorf("check saw %v, want the namespace and its count of 2", saw)
	}
	for _, p := range docs {
		d, err := s.RequestDeletion(ctx, p.Key(), base.Add(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		if err := s.DeleteNamespace(ctx, "team-d", check); !errors.Is(err, tenancy.ErrNamespaceNotEmpty) {
			t.Errorf("DeleteNamespace while a proxy is being deleted: %v, want ErrNamespaceNotEmpty", err)
		}
		if err := s.Delete(ctx, p.Key(), d.UpdateTime); err != nil {
			t.Fatal(err)
		}
	}
	refused := errors.New("refused")
	if err := s.DeleteNamespace(ctx, "team-d", func(*tenancy.Namespace) error { return refused }); !errors.Is(err, refused) {
		t.Errorf("DeleteNamespace check refuses: %v, want check's error", err)
	}
	if _, err := s.GetNamespace(ctx, "team-d"); err != nil {
		t.Fatalf("a refused DeleteNamespace deleted it: %v", err)
	}
	if err := s.DeleteNamespace(ctx, "team-d", check); err != nil {
		t.Fatalf("DeleteNamespace of an empty namespace: %v", err)
	}
	if _, err := s.GetNamespace(ctx, "team-d"); !errors.Is(err, tenancy.ErrNamespaceNotFound) {
		t.Errorf("GetNamespace after DeleteNamespace: %v, want ErrNamespaceNotFound", err)
	}
	saw = nil
	if err := s.DeleteNamespace(ctx, "team-d", check); !errors.Is(err, tenancy.ErrNamespaceNotFound) || len(saw) == 0 || saw[0] != nil {
		t.Errorf("DeleteNamespace of an absent namespace: %v, check saw %v; want ErrNamespaceNotFound after check saw nil", err, saw)
	}
}
