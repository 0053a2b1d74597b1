package tenancy_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/internal/pricing"
	"github.com/egress-proxies/egress/internal/tenancy"
)

// TestAllowed is the whole permission table: for each permission, who of
// admin, owner, editor, viewer and no member has it.
func TestAllowed(t *testing.T) {
	type row [5]bool // admin (no member), owner, editor, viewer, none
	cases := map[tenancy.Permission]row{
		tenancy.GetNamespace:    {true, true, true, true, false},
		tenancy.UpdateMembers:   {true, true, false, false, false},
		tenancy.UpdateQuota:     {true, false, false, false, false},
		tenancy.UpdateBudget:    {true, false, false, false, false},
		tenancy.CreateNamespace: {true, false, false, false, false},
		tenancy.DeleteNamespace: {true, false, false, false, false},
		tenancy.ListProxies:     {true, true, true, true, false},
		tenancy.GetProxy:        {true, true, true, true, false},
		tenancy.CreateProxy:     {true, true, true, false, false},
		tenancy.DeleteProxy:     {true, true, true, false, false},
		tenancy.RotateProxy:     {true, true, true, false, false},
		// Live changes are an editor's, as a rotation.
		tenancy.UpdateProxy:       {true, true, true, false, false},
		tenancy.RotateCredentials: {true, true, true, false, false},
		// The warm pools are the platform's: admins alone.
		tenancy.ListPools:  {true, false, false, false, false},
		tenancy.GetPool:    {true, false, false, false, false},
		tenancy.PutPool:    {true, false, false, false, false},
		tenancy.DeletePool: {true, false, false, false, false},
		// So are the cloud accounts.
		tenancy.ListAccounts:  {true, false, false, false, false},
		tenancy.GetAccount:    {true, false, false, false, false},
		tenancy.PutAccount:    {true, false, false, false, false},
		tenancy.DeleteAccount: {true, false, false, false, false},
		// Credentials are the editors' and owners': an admin outside sees
		// none, and a viewer reads the proxy without them.
		tenancy.ReadProxyURL: {false, true, true, false, false},
		// What a VM printed: its editors' and owners', no admin's outside.
		tenancy.ReadConsoleTail: {false, true, true, false, false},
	}
	for p, want := range cases {
		got := row{
			tenancy.Allowed(p, true, ""),
			tenancy.Allowed(p, false, tenancy.Owner),
			tenancy.Allowed(p, false, tenancy.Editor),
			tenancy.Allowed(p, false, tenancy.Viewer),
			tenancy.Allowed(p, false, ""),
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s: (-want +got) over admin, owner, editor, viewer, none:\n%s", p, diff)
		}
	}
	for p := range tenancy.Permissions {
		if _, ok := cases[p]; !ok && p != tenancy.ListNamespaces {
			t.Errorf("permission %s has no row here", p)
		}
	}
}

func TestAdmins(t *testing.T) {
	a, err := tenancy.ParseAdmins(" Ops@Example.com , domain:Platform.Example ,")
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]bool{
		"ops@example.com": true, "OPS@example.com": true, "anyone@platform.example": true,
		"ops@example.org": false, "ops@sub.platform.example": false, "": false, "platform.example": false,
	}
	for email, want := range cases {
		if got := a.Contains(email); got != want {
			t.Errorf("Contains(%q) = %v, want %v", email, got, want)
		}
	}
	for _, bad := range []string{"ops", "domain:", "domain:a@b", "a@b@c"} {
		if _, err := tenancy.ParseAdmins(bad); err == nil {
			t.Errorf("ParseAdmins(%q) took it", bad)
		}
	}
}

// TestKeepsOwner: no change of members leaves a namespace without an
// owner, except one that had none and still has no members.
func TestKeepsOwner(t *testing.T) {
	type m = map[string]tenancy.Role
	cases := map[string]struct {
		reason        string
		before, after m
		want          bool
	}{
		"LastOwnerLeaves":  {reason: "the hole: no one manages it", before: m{"a": tenancy.Owner, "b": tenancy.Editor}, after: m{"b": tenancy.Editor}},
		"LastOwnerDemoted": {reason: "a demotion is a removal of the owner", before: m{"a": tenancy.Owner}, after: m{"a": tenancy.Viewer}},
		"EveryoneLeaves":   {reason: "an owner who empties the namespace leaves it to the admins", before: m{"a": tenancy.Owner}, after: m{}},
		"HandOver":         {reason: "another owner in the same change", before: m{"a": tenancy.Owner}, after: m{"b": tenancy.Owner}, want: true},
		"OneOfTwoOwners":   {reason: "an owner remains", before: m{"a": tenancy.Owner, "b": tenancy.Owner}, after: m{"b": tenancy.Owner}, want: true},
		"EmptyStaysEmpty":  {reason: "a namespace with no members may change its quota", before: nil, after: m{}, want: true},
		"MembersNoOwner":   {reason: "members are added with an owner among them", before: nil, after: m{"b": tenancy.Editor}},
		"OwnerlessGetsOne": {reason: "a namespace from before tenancy gets its owner", before: nil, after: m{"b": tenancy.Owner}, want: true},
		"OwnerlessMembers": {reason: "an ownerless namespace with members gets no more members without an owner", before: m{"b": tenancy.Editor}, after: m{"b": tenancy.Editor, "c": tenancy.Viewer}},
		"OwnerlessEmptied": {reason: "an ownerless namespace may lose its members", before: m{"b": tenancy.Editor}, after: m{}, want: true},
	}
	for name, tc := range cases {
		if got := tenancy.KeepsOwner(tc.before, tc.after); got != tc.want {
			t.Errorf("%s: %s\nKeepsOwner(%v, %v) = %v, want %v", name, tc.reason, tc.before, tc.after, got, tc.want)
		}
	}
}

// TestStopFor: a namespace's traffic stops when its month so far reaches
// a budget that stops traffic there, and only then.
func TestStopFor(t *testing.T) {
	eur := func(amount string) pricing.Money {
		m, err := pricing.ParseMoney(amount, "EUR")
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	stops := &tenancy.Budget{Monthly: "200.00", Currency: "EUR", AtBudget: tenancy.StopTraffic}
	for name, tc := range map[string]struct {
		reason      string
		budget      *tenancy.Budget
		monthToDate pricing.Money
		want        *tenancy.TrafficStopped
	}{
		"NoBudget":         {reason: "Without a budget nothing stops.", monthToDate: eur("1000.00")},
		"RefuseNew":        {reason: "The default refuses what would exceed it and stops nothing.", budget: &tenancy.Budget{Monthly: "200.00", Currency: "EUR"}, monthToDate: eur("250.00")},
		"Under":            {reason: "A cent under the budget carries.", budget: stops, monthToDate: eur("199.99")},
		"UnreadableAmount": {reason: "An old document's budget that is no amount stops nothing.", budget: &tenancy.Budget{Monthly: "lots", Currency: "EUR", AtBudget: tenancy.StopTraffic}, monthToDate: eur("250.00")},
		"AtTheBudget": {reason: "Reaching the budget stops, naming the month and both amounts.", budget: stops, monthToDate: eur("200.00"),
			want: &tenancy.TrafficStopped{Month: "2026-12", Reason: "the namespace's month 2026-12 is 200.00 EUR so far, at its monthly budget of 200.00 EUR, which stops traffic there"}},
		"Over": {reason: "Over the budget stops as well.", budget: stops, monthToDate: eur("212.50"),
			want: &tenancy.TrafficStopped{Month: "2026-12", Reason: "the namespace's month 2026-12 is 212.50 EUR so far, at its monthly budget of 200.00 EUR, which stops traffic there"}},
	} {
		t.Run(name, func(t *testing.T) {
			got := tenancy.StopFor(tc.budget, "2026-12", tc.monthToDate)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s (-want +got):\n%s", tc.reason, diff)
			}
		})
	}
}
