package account_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/internal/account"
	"github.com/egress-proxies/egress/internal/clock"
)

type countingSource struct {
	lists int
	list  []account.Account
	err   error
}

func (s *countingSource) ListAccounts(context.Context) ([]account.Account, error) {
	s.lists++
	return s.list, s.err
}

func (s *countingSource) CountPlaced(context.Context, string, string, string) (int, error) {
	return 7, nil
}

// TestCache: the list is read once a TTL, an empty list is kept as one,
// a failed read is not kept, and counts are never cached.
func TestCache(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewFake(time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC))
	src := &countingSource{}
	c := account.NewCache(src, clk, time.Minute)
	var reads []int
	step := func(advance time.Duration) {
		clk.Advance(advance)
		if _, err := c.ListAccounts(ctx); err != nil && src.err == nil {
			t.Fatal(err)
		}
		reads = append(reads, src.lists)
	}
	step(0)                // empty: read
	step(30 * time.Second) // kept, though empty
	step(30 * time.Second) // a TTL old: read
	src.list = []account.Account{{ID: "second"}}
	step(time.Minute) // read, and seen
	src.err = errors.New("unavailable")
	step(time.Minute) // fails
	step(0)           // tried again, not kept
	if diff := cmp.Diff([]int{1, 1, 2, 3, 4, 5}, reads); diff != "" {
		t.Errorf("reads of the source after each step (-want +got):\n%s", diff)
	}
	if n, err := c.CountPlaced(ctx, "gcp", "second", "r"); n != 7 || err != nil {
		t.Errorf("CountPlaced = %d, %v; want the source's 7", n, err)
	}
}
