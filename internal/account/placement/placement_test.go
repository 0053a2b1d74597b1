package placement_test

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/internal/account/placement"
	"github.com/egress-proxies/egress/internal/provider"
)

func quotas(instances, cpus, addresses provider.Quota) *provider.Quotas {
	return &provider.Quotas{Instances: instances, CPUs: cpus, Addresses: addresses}
}

func TestHeadroom(t *testing.T) {
	cases := map[string]struct {
		reason string
		c      placement.Candidate
		want   int
	}{
		"NothingKnown":   {reason: "no quota read and no cap bounds nothing", c: placement.Candidate{}, want: placement.Unbounded},
		"Unreported":     {reason: "a quota the cloud does not report (limit 0) bounds nothing", c: placement.Candidate{Quotas: &provider.Quotas{}}, want: placement.Unbounded},
		"Instances":      {reason: "free instances", c: placement.Candidate{Quotas: quotas(provider.Quota{Limit: 10, Usage: 7}, provider.Quota{}, provider.Quota{})}, want: 3},
		"TightestQuota":  {reason: "the least free of the quotas", c: placement.Candidate{Quotas: quotas(provider.Quota{Limit: 10, Usage: 1}, provider.Quota{Limit: 24, Usage: 22}, provider.Quota{Limit: 8, Usage: 4})}, want: 2},
		"Cap":            {reason: "the account's own cap against its placed proxies", c: placement.Candidate{Cap: 5, Placed: 3}, want: 2},
		"CapFull":        {reason: "a cap reached", c: placement.Candidate{Cap: 5, Placed: 5}, want: 0},
		"CapOverfull":    {reason: "more placed than the cap (a cap lowered) is no negative room", c: placement.Candidate{Cap: 5, Placed: 7}, want: 0},
		"CapUnderQuota":  {reason: "both hold: the tighter wins", c: placement.Candidate{Cap: 5, Placed: 4, Quotas: quotas(provider.Quota{Limit: 10, Usage: 0}, provider.Quota{}, provider.Quota{})}, want: 1},
		"QuotaUnderCap":  {reason: "both hold: the tighter wins", c: placement.Candidate{Cap: 50, Quotas: quotas(provider.Quota{Limit: 10, Usage: 10}, provider.Quota{}, provider.Quota{})}, want: 0},
		"Unavailable":    {reason: "an account whose provider cannot be made takes none", c: placement.Candidate{Unavailable: "its provider is not available"}, want: 0},
		"PlacedNoCapped": {reason: "placed proxies alone bound nothing", c: placement.Candidate{Placed: 1000}, want: placement.Unbounded},
	}
	for name, tc := range cases {
		if got := tc.c.Headroom(); got != tc.want {
			t.Errorf("%s: %s\nHeadroom() = %d, want %d", name, tc.reason, got, tc.want)
		}
	}
}

func TestChoose(t *testing.T) {
	full := placement.Candidate{ID: "full", Cap: 2, Placed: 2}
	cases := map[string]struct {
		reason     string
		candidates []placement.Candidate
		want       string
		wantErr    string
	}{
		"OnlyDefault": {reason: "a deployment without accounts places in its default", candidates: []placement.Candidate{{}}, want: ""},
		"OnlyRoom":    {reason: "the one account with headroom, whatever the hash", candidates: []placement.Candidate{{ID: "", Quotas: quotas(provider.Quota{Limit: 4, Usage: 4}, provider.Quota{}, provider.Quota{})}, full, {ID: "room", Cap: 3, Placed: 2}}, want: "room"},
		"Unavailable": {reason: "an unavailable account says why", candidates: []placement.Candidate{{ID: "broken", Unavailable: "its provider is not available: no token"}},
			wantErr: `no account has headroom: account "broken": its provider is not available: no token`},
		"NoneServes": {reason: "no active account serves the region", wantErr: "no account has headroom: none is active and serves the region"},
		"AllFull": {reason: "each full account says what fills it", candidates: []placement.Candidate{{ID: "", Quotas: quotas(provider.Quota{Limit: 4, Usage: 4}, provider.Quota{}, provider.Quota{Limit: 8, Usage: 8})}, full},
			wantErr: `no account has headroom: the default account: 4 of 4 instances in use (the cloud's quota), 8 of 8 addresses in use (the cloud's quota); account "full": 2 proxies placed, its cap is 2`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := placement.Choose("uid-1", tc.candidates)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr || !errors.Is(err, placement.ErrNoHeadroom) {
					t.Fatalf("%s\nChoose: %q, %v; want the error %q wrapping ErrNoHeadroom", tc.reason, got, err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("%s\nChoose = %q, %v; want %q", tc.reason, got, err, tc.want)
			}
		})
	}
}

// TestChooseSpreads: over a thousand uids, two accounts with room each
// get close to half, three close to a third; each uid's choice is the
// same whatever the order of the candidates, and a full account's share
// goes to the others.
func TestChooseSpreads(t *testing.T) {
	const n = 1000
	count := func(candidates []placement.Candidate) map[string]int {
		got := map[string]int{}
		reversed := slices.Clone(candidates)
		slices.Reverse(reversed)
		for i := range n {
			uid := fmt.Sprintf("3f2b8c1e-9d4a-4b7e-8c21-%012d", i)
			a, err := placement.Choose(uid, candidates)
			if err != nil {
				t.Fatal(err)
			}
			if b, _ := placement.Choose(uid, reversed); a != b {
				t.Fatalf("uid %s: %q in one order, %q in the other", uid, a, b)
			}
			got[a]++
		}
		return got
	}
	within := func(what string, got map[string]int, ids []string, share int) {
		t.Helper()
		if len(got) != len(ids) {
			t.Errorf("%s: %v, want only %v", what, got, ids)
		}
		for _, id := range ids {
			if got[id] < share*85/100 || got[id] > share*115/100 {
				t.Errorf("%s: %s got %d of %d, want %d±15%%", what, placement.Name(id), got[id], n, share)
			}
		}
	}
	within("two accounts", count([]placement.Candidate{{ID: ""}, {ID: "second"}}), []string{"", "second"}, n/2)
	within("three accounts", count([]placement.Candidate{{ID: ""}, {ID: "second"}, {ID: "third"}}), []string{"", "second", "third"}, n/3)
	got := count([]placement.Candidate{{ID: ""}, {ID: "second", Cap: 1, Placed: 1}, {ID: "third"}})
	if diff := cmp.Diff(0, got["second"]); diff != "" {
		t.Errorf("a full account's share (-want +got):\n%s", diff)
	}
	within("a full account beside two", got, []string{"", "third"}, n/2)
}
