package mock_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/egress-proxies/egress/internal/clock"
	"github.com/egress-proxies/egress/internal/provider/mock"
	"github.com/egress-proxies/egress/internal/worktest"
)

// TestWorkIsLinearInTheFleet creates 100,000 VMs, half with a static
// address, deletes them all, lets their deletions end and lists what is
// left, with a Get of each VM between, and bounds the records the mock
// looked at (Visits): each call looks at the record it names and at most a
// constant number of others, and a list at what it lists. A call that
// walks the whole fleet makes the whole run quadratic, and it fails here
// long before the end: the bound is checked after every call.
func TestWorkIsLinearInTheFleet(t *testing.T) {
	const n = 100_000
	ctx := context.Background()
	clk := clock.NewFake(epoch)
	p := mock.New(mock.Options{Clock: clk, DeletionDelay: time.Minute})
	// Each VM is looked at when it is purged, and once by each list; a
	// static address once by each list too: a few records a call.
	budget := worktest.NewBudget(t, p.Visits, 100)
	check := func(what string) { t.Helper(); budget.Spend(what, 4) }
	ids := make([]string, n)
	for i := range n {
		req := request(fmt.Sprintf("00000000-0000-4000-8000-%012d", i))
		req.StaticIP = i%2 == 0
		id, err := p.Create(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		ids[i] = id
		check("create")
		if i%10 == 0 {
			clk.Advance(time.Second)
		}
	}
	listed, err := p.ListByTag(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(listed) != n {
		t.Fatalf("listed %d instances, want %d", len(listed), n)
	}
	check("list")
	for i, id := range ids {
		if _, err := p.Get(ctx, id); err != nil {
			t.Fatal(err)
		}
		check("get")
		if err := p.Delete(ctx, id); err != nil {
			t.Fatal(err)
		}
		check("delete")
		if i%10 == 0 {
			clk.Advance(time.Second)
		}
	}
	clk.Advance(time.Minute)
	if _, err := p.Create(ctx, request("after")); err != nil {
		t.Fatal(err)
	}
	check("create after the deletions")
	listed, err = p.ListByTag(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// The one VM made last, and the static addresses no VM uses now.
	if want := 1 + n/2; len(listed) != want {
		t.Fatalf("listed %d, want %d: the new VM and the unused addresses", len(listed), want)
	}
	check("list after the deletions")
}

// TestEveryWalkIsCounted holds Visits honest: every loop over the stored
// instances or addresses counts each record it looks at, so a new walk of
// the fleet cannot escape TestWorkIsLinearInTheFleet's bound.
func TestEveryWalkIsCounted(t *testing.T) {
	worktest.WalksCounted(t, ".", "visits", "instances", "addresses")
}
