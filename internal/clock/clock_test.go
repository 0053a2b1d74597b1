package clock_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/internal/clock"
)

// TestFakeAfterFunc: calls run when the clock is moved past their time, in
// the order they came due (ties in the order they were scheduled), a call
// due already runs at once, and a stopped one never runs.
func TestFakeAfterFunc(t *testing.T) {
	start := time.Date(2026, 12, 3, 0, 0, 0, 0, time.UTC)
	f := clock.NewFake(start)
	var got []string
	at := func(name string) func() { return func() { got = append(got, name+"@"+f.Now().Sub(start).String()) } }
	f.AfterFunc(3*time.Second, at("c"))
	f.AfterFunc(time.Second, at("a"))
	f.AfterFunc(3*time.Second, at("d"))
	stop := f.AfterFunc(2*time.Second, at("stopped"))
	f.AfterFunc(0, at("now"))
	if !stop() {
		t.Error("stop of a pending call reported it had already run")
	}
	f.Advance(time.Second)
	if err := f.Sleep(context.Background(), 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if stop() {
		t.Error("a second stop reported it cancelled something")
	}
	want := []string{"now@0s", "a@1s", "c@6s", "d@6s"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
}
