package storefake_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/egress-proxies/egress/internal/clock"
	"github.com/egress-proxies/egress/internal/proxy"
	"github.com/egress-proxies/egress/internal/store/storefake"
	"github.com/egress-proxies/egress/internal/worktest"
)

// TestScansAreBoundedByWhatTheyRead writes 100,000 documents in 5,000
// namespaces of twenty, one in ten of them on its way somewhere (a
// progress time), and a warm pool of ten members; lists every namespace,
// page by page; reads the pool's members and the stalled documents after
// every hundredth namespace; reads the live uids once; deletes every
// document. It bounds the documents the store looked at (Visits): a query
// looks at what its index holds, as Firestore's does (a namespace's
// documents, a pool's, the progressing ones), and only LiveUIDs at the
// whole fleet. A scan of the whole fleet for one namespace's page would
// look at 100,000 documents for each of 5,000 namespaces; it fails here at
// once, since the bound is checked after every call.
func TestScansAreBoundedByWhatTheyRead(t *testing.T) {
	const (
		namespaces = 5000
		per        = 20
		n          = namespaces * per
		members    = 10
	)
	ctx := context.Background()
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	s := storefake.New(clock.NewFake(now))
	check := worktest.NewBudget(t, s.Visits, 0).Spend
	var keys []proxy.Key
	for i := range n {
		p := &proxy.Proxy{Namespace: fmt.Sprintf("ns-%04d", i/per), Name: fmt.Sprintf("proxy-%02d", i%per), UID: fmt.Sprintf("uid-%d", i), CreateTime: now}
		if i%10 == 0 {
			p.Status.Phase = proxy.PhaseCreating
			p.Reconciler.ProgressTime = now.Add(-time.Duration(i) * time.Second)
		}
		if _, err := s.Create(ctx, p, per); err != nil {
			t.Fatal(err)
		}
		keys = append(keys, p.Key())
		check("create", 0)
	}
	if _, _, err := s.PutPool(ctx, "warm", proxy.PoolSpec{Provider: "mock", Size: members}, now); err != nil {
		t.Fatal(err)
	}
	check("put a pool", 1)
	if _, err := s.EnsureMembers(ctx, "warm", now); err != nil {
		t.Fatal(err)
	}
	check("make its members", members)

	for i := range namespaces {
		for token := ""; ; {
			page, next, err := s.List(ctx, fmt.Sprintf("ns-%04d", i), 8, token)
			if err != nil {
				t.Fatal(err)
			}
			if len(page) == 0 {
				t.Fatalf("an empty page of namespace %d", i)
			}
			check("list a page", per)
			if token = next; token == "" {
				break
			}
		}
		if i%100 == 0 {
			if got, err := s.Members(ctx, "warm"); err != nil || len(got) != members {
				t.Fatalf("%d members (%v), want %d", len(got), err, members)
			}
			check("read the pool's members", members)
			stalled, err := s.Stalled(ctx, now, 1000)
			if err != nil || len(stalled) != 1000 {
				t.Fatalf("%d stalled documents (%v), want 1000, the limit", len(stalled), err)
			}
			// The documents on their way, and the new members, which are
			// too.
			check("read the stalled", n/10+members)
		}
	}
	uids, err := s.LiveUIDs(ctx)
	if err != nil || len(uids) != n+members {
		t.Fatalf("%d live uids (%v), want %d", len(uids), err, n+members)
	}
	check("read the live uids", n+members)
	for _, k := range keys {
		doc, err := s.Get(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Delete(ctx, k, doc.UpdateTime); err != nil {
			t.Fatal(err)
		}
		check("delete", 0)
	}
	if stalled, err := s.Stalled(ctx, now.Add(time.Hour), 1000); err != nil || len(stalled) != members {
		t.Fatalf("%d stalled documents (%v) once all are deleted, want the members alone", len(stalled), err)
	}
	check("read the stalled once all are deleted", members)
}

// TestEveryWalkIsCounted holds Visits honest: every loop over the stored
// documents, their indexes, the namespaces or the pools counts what it
// looks at.
func TestEveryWalkIsCounted(t *testing.T) {
	worktest.WalksCounted(t, ".", "visits", "docs", "byParent", "progressing", "namespaces", "pools")
}
