package providertest

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/internal/provider"
)

// QuotaTarget is a provider over a fake whose regional quotas leave room
// for a number of proxies, with the levers RunQuota needs.
type QuotaTarget struct {
	Provider provider.Provider
	// Request is the create of the i-th proxy, every one in the region
	// whose quota the fake holds.
	Request func(i int) provider.CreateRequest
	// Settle finishes what the fake has in progress: creates accepted,
	// deletes gone (an instance shutting down still counts, as it does
	// in the clouds).
	Settle func()
	// Quota is what the refusal must name for a user to know which
	// quota to raise: the cloud's name of the quota ("CPUS") or of its
	// error ("InstanceLimitExceeded").
	Quota string
}

// RunQuota holds the provider to the contract of a regional quota:
// with room for k proxies, k creates succeed and the next fails with
// KindQuota, in Create's error or, for a cloud that refuses in the
// create's operation (Compute Engine), in Get's with Op "create", its
// message naming the quota; and once one proxy is deleted, the refused
// one's next attempt (a new request id, as the reconciler makes) takes
// the room. newTarget(t, k) returns a fresh provider over a fake with
// room for k proxies.
func RunQuota(t *testing.T, newTarget func(t *testing.T, room int) QuotaTarget) {
	ctx := context.Background()
	const room = 2
	tg := newTarget(t, room)
	type outcome struct {
		Created    int
		Refused    provider.Kind
		NamesQuota bool
		AfterFree  provider.Kind
		Instances  int
	}
	var got outcome
	var ids []string
	for i := range room {
		id, err := tg.Provider.Create(ctx, tg.Request(i))
		if err != nil {
			t.Fatalf("create %d of %d within the quota: %v", i+1, room, err)
		}
		ids = append(ids, id)
	}
	tg.Settle()
	for _, id := range ids {
		if _, err := tg.Provider.Get(ctx, id); err == nil {
			got.Created++
		} else {
			t.Errorf("Get(%s) within the quota: %v", id, err)
		}
	}
	err := createSettled(ctx, tg, tg.Request(room))
	got.Refused = provider.KindOf(err)
	got.NamesQuota = err != nil && strings.Contains(err.Error(), tg.Quota)
	if !got.NamesQuota {
		t.Logf("the create past the quota: %v", err)
	}
	if err := tg.Provider.Delete(ctx, ids[0]); err != nil {
		t.Fatalf("Delete(%s): %v", ids[0], err)
	}
	tg.Settle()
	again := tg.Request(room)
	again.RequestID = fmt.Sprintf("after-a-delete-%d", room)
	err = createSettled(ctx, tg, again)
	got.AfterFree = provider.KindOf(err)
	if err != nil {
		t.Logf("the create after a delete: %v", err)
	}
	list, err := tg.Provider.ListByTag(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range list {
		if in.State != provider.StateTerminated {
			got.Instances++
		}
	}
	want := outcome{Created: room, Refused: provider.KindQuota, NamesQuota: true, AfterFree: "", Instances: room}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("creates against a quota with room for %d proxies, refusal naming %q (-want +got):\n%s", room, tg.Quota, diff)
	}
}

// createSettled creates, lets the fake finish, and reads the instance
// back: the error of a create refused at once or in its operation.
func createSettled(ctx context.Context, tg QuotaTarget, req provider.CreateRequest) error {
	id, err := tg.Provider.Create(ctx, req)
	if err != nil {
		return err
	}
	tg.Settle()
	_, err = tg.Provider.Get(ctx, id)
	return err
}

// Distinct is req for the i-th of distinct proxies, for a test that
// needs several: its uid begins with i in eight digits, and its name is
// the uid's.
func Distinct(req provider.CreateRequest, i int) provider.CreateRequest {
	req.UID = fmt.Sprintf("%08d", i) + req.UID[min(8, len(req.UID)):]
	req.Name = provider.NameFromUID(req.UID)
	return req
}

// QuotaReads creates n proxies through tg (tg.Request(0) to n-1), lets
// the fake finish, and reads the provider's Quotas of region three
// times: after the creates, right after the first proxy's delete, and
// once the fake finished that delete. A test compares them with the
// limits it set and the usage it made.
func QuotaReads(t *testing.T, tg QuotaTarget, region string, n int) []provider.Quotas {
	t.Helper()
	ctx := context.Background()
	qr, ok := provider.AsQuotaReader(tg.Provider)
	if !ok {
		t.Fatalf("%T is no provider.QuotaReader", tg.Provider)
	}
	var ids []string
	for i := range n {
		id, err := tg.Provider.Create(ctx, tg.Request(i))
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	tg.Settle()
	var out []provider.Quotas
	read := func() {
		q, err := qr.Quotas(ctx, region)
		if err != nil {
			t.Fatalf("Quotas(%s): %v", region, err)
		}
		out = append(out, q)
	}
	read()
	if err := tg.Provider.Delete(ctx, ids[0]); err != nil {
		t.Fatal(err)
	}
	read()
	tg.Settle()
	read()
	return out
}
