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

// testRotation: a rotation request of a Ready proxy sets
// rotateRequestTime; another within the least interval is refused, saying
// when, and one after it taken; a proxy not Ready, or being deleted,
// takes none. A refusal writes nothing.
func testRotation(t *testing.T, s Store) {
	ctx := context.Background()
	p, err := s.Create(ctx, New("team-r", "egress-1"), 20)
	if err != nil {
		t.Fatal(err)
	}
	limits := tenancy.Limits{RotateMinInterval: 10 * time.Minute}
	at := base.Add(time.Hour)
	unchanged := func(what string, before *proxy.Proxy) {
		t.Helper()
		after, err := s.Get(ctx, p.Key())
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(before, after); diff != "" {
			t.Errorf("%s changed the document (-before +after):\n%s", what, diff)
		}
	}
	if _, err := s.RequestRotation(ctx, p.Key(), at, limits); !errors.Is(err, proxy.ErrNotReady) {
		t.Errorf("RequestRotation of a Pending proxy: %v, want ErrNotReady", err)
	}
	unchanged("the refused rotation of a Pending proxy", p)
	ready := *p
	ready.Status.Phase = proxy.PhaseReady
	if ready.UpdateTime, err = s.UpdateStatus(ctx, &ready); err != nil {
		t.Fatal(err)
	}
	for _, when := range []time.Time{at, at.Add(10 * time.Minute)} {
		got, err := s.RequestRotation(ctx, p.Key(), when, limits)
		if err != nil {
			t.Fatalf("RequestRotation at %s: %v", when, err)
		}
		if got.RotateRequestTime == nil || !got.RotateRequestTime.Equal(when) {
			t.Errorf("rotateRequestTime %v, want %s", got.RotateRequestTime, when)
		}
		if !got.UpdateTime.After(p.UpdateTime) {
			t.Errorf("a rotation request did not write the document: update time %s, before it %s", got.UpdateTime, p.UpdateTime)
		}
		again, err := s.Get(ctx, p.Key())
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(got, again); diff != "" {
			t.Errorf("RequestRotation returned what a Get does not read (-returned +get):\n%s", diff)
		}
		p = got
	}
	_, err = s.RequestRotation(ctx, p.Key(), at.Add(19*time.Minute), limits)
	var retry *proxy.RetryError
	if !errors.Is(err, proxy.ErrRotatedRecently) || !errors.As(err, &retry) || !retry.At.Equal(at.Add(20*time.Minute)) {
		t.Errorf("RequestRotation 9m after the last: %v, want ErrRotatedRecently, retry at %s", err, at.Add(20*time.Minute))
	}
	unchanged("the rotation within the interval", p)
	if _, err := s.RequestRotation(ctx, proxy.Key{Namespace: "team-r", Name: "absent"}, at, limits); !errors.Is(err, proxy.ErrNotFound) {
		t.Errorf("RequestRotation of an absent document: %v, want ErrNotFound", err)
	}
	deleting, err := s.RequestDeletion(ctx, p.Key(), at.Add(2*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.RequestRotation(ctx, p.Key(), at.Add(3*time.Hour), limits); !errors.Is(err, proxy.ErrBeingDeleted) {
		t.Errorf("RequestRotation of a proxy being deleted: %v, want ErrBeingDeleted", err)
	}
	unchanged("the refused rotation of a proxy being deleted", deleting)
}

// testCreatesPerHour: a namespace's creates and rotations together ask
// for at most CreatesPerHour VMs in any hour, counted in its document in
// their own transactions; past it, a *proxy.RetryError says when the
// oldest leaves the hour, and nothing is written. Another namespace has
// its own hour.
func testCreatesPerHour(t *testing.T, s Store) {
	ctx := context.Background()
	for _, name := range []string{"team-h", "team-i"} {
		if _, err := s.CreateNamespace(ctx, rules.NewNamespace(name, map[string]tenancy.Role{alice: tenancy.Owner}, 0, 20, base)); err != nil {
			t.Fatal(err)
		}
	}
	admit := func(*tenancy.Namespace) (tenancy.Limits, error) {
		return tenancy.Limits{Quota: 20, CreatesPerHour: 2}, nil
	}
	at := func(ns, name string, d time.Duration) *proxy.Proxy {
		p := New(ns, name)
		p.CreateTime = base.Add(d)
		return p
	}
	first, err := s.CreateInNamespace(ctx, at("team-h", "p-0", 0), admit)
	if err != nil {
		t.Fatal(err)
	}
	ready := *first
	ready.Status.Phase = proxy.PhaseReady
	if _, err := s.UpdateStatus(ctx, &ready); err != nil {
		t.Fatal(err)
	}
	if _, err := s.RequestRotation(ctx, first.Key(), base.Add(20*time.Minute), tenancy.Limits{CreatesPerHour: 2}); err != nil {
		t.Fatalf("the second VM of the hour, a rotation: %v", err)
	}
	before, err := s.GetNamespace(ctx, "team-h")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]time.Time{base, base.Add(20 * time.Minute)}, before.Creations, cmpopts.EquateApproxTime(0)); diff != "" {
		t.Errorf("the namespace's creations (-want +got):\n%s", diff)
	}
	_, err = s.CreateInNamespace(ctx, at("team-h", "p-1", 30*time.Minute), admit)
	var retry *proxy.RetryError
	if !errors.Is(err, proxy.ErrCreatesPerHour) || !errors.As(err, &retry) || !retry.At.Equal(base.Add(time.Hour)) {
		t.Errorf("a third VM within the hour, a create: %v; want ErrCreatesPerHour, retry at %s", err, base.Add(time.Hour))
	}
	if _, err := s.Get(ctx, proxy.Key{Namespace: "team-h", Name: "p-1"}); !errors.Is(err, proxy.ErrNotFound) {
		t.Errorf("the refused create wrote the proxy: %v", err)
	}
	if _, err := s.RequestRotation(ctx, first.Key(), base.Add(40*time.Minute), tenancy.Limits{CreatesPerHour: 2}); !errors.Is(err, proxy.ErrCreatesPerHour) {
		t.Errorf("a third VM within the hour, a rotation: %v; want ErrCreatesPerHour", err)
	}
	after, err := s.GetNamespace(ctx, "team-h")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(before, after); diff != "" {
		t.Errorf("the refusals changed the namespace (-before +after):\n%s", diff)
	}
	if _, err := s.CreateInNamespace(ctx, at("team-i", "p-0", 30*time.Minute), admit); err != nil {
		t.Errorf("another namespace's first VM: %v", err)
	}
	if _, err := s.CreateInNamespace(ctx, at("team-h", "p-1", time.Hour), admit); err != nil {
		t.Errorf("an hour after the first, a VM: %v", err)
	}
	ns, err := s.GetNamespace(ctx, "team-h")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]time.Time{base.Add(20 * time.Minute), base.Add(time.Hour)}, ns.Creations, cmpopts.EquateApproxTime(0)); diff != "" {
		t.Errorf("the namespace's creations keep the last hour's (-want +got):\n%s", diff)
	}
	if ns.ProxyCount != 2 {
		t.Errorf("proxy count %d, want 2", ns.ProxyCount)
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
	if diff := cmp.Diff(&tenancy.Namespace{Name: "legacy", ProxyCount: 1}, legacy, ignoreUpdateTime, equateEmpty); diff != "" {
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
