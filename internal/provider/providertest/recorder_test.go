package providertest_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/egress-proxies/egress/internal/clock"
	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/provider/mock"
	"github.com/egress-proxies/egress/internal/provider/providertest"
)

func TestRecorder(t *testing.T) {
	ctx := context.Background()
	r := providertest.NewRecorder(mock.New(mock.Options{}))
	boom := errors.New("injected")
	r.FailOnce(providertest.Create, boom)

	req := provider.CreateRequest{Name: "proxy-a", UID: "a"}
	if _, err := r.Create(ctx, req); !errors.Is(err, boom) {
		t.Fatalf("first Create: %v, want the injected error", err)
	}
	id, err := r.Create(ctx, req)
	if err != nil {
		t.Fatalf("second Create: %v, want success (the error was one-shot)", err)
	}
	if _, err := r.Get(ctx, id); err != nil {
		t.Fatal(err)
	}
	_ = r.Delete(ctx, id)
	if _, err := r.ListByTag(ctx); err != nil {
		t.Fatal(err)
	}

	want := []providertest.Call{
		{Method: providertest.Create, Arg: "proxy-a", Err: boom},
		{Method: providertest.Create, Arg: "proxy-a"},
		{Method: providertest.Get, Arg: id},
		{Method: providertest.Delete, Arg: id},
		{Method: providertest.ListByTag},
	}
	if diff := cmp.Diff(want, r.Calls(), cmpopts.EquateErrors()); diff != "" {
		t.Errorf("Calls (-want +got):\n%s", diff)
	}
	if got := r.Count(providertest.Create); got != 2 {
		t.Errorf("Count(Create) = %d, want 2", got)
	}
	r.Reset()
	if n := len(r.Calls()); n != 0 {
		t.Errorf("after Reset, %d calls recorded, want 0", n)
	}
}

// TestRecorderPassesConformance shows the decorator changes nothing a
// provider promises.
func TestRecorderPassesConformance(t *testing.T) {
	providertest.Run(t, func(t *testing.T) providertest.Target {
		clk := clock.NewFake(time.Unix(0, 0))
		m := mock.New(mock.Options{Clock: clk, ProvisioningDelay: time.Minute})
		return providertest.Target{
			Provider:     providertest.NewRecorder(m),
			Settle:       func() { clk.Advance(time.Minute) },
			AddUnmanaged: func(name, uid string) { m.AddForeign(name, map[string]string{provider.LabelUID: uid}) },
			UnknownID:    "mock://nothing",
		}
	})
}
