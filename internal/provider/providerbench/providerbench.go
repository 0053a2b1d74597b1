// Package providerbench is what a cloud's phase of make bench provides
// (Phase), and what such a phase drives: proxy lifecycles on the cloud's
// provider over its fake, at the reconciler's floor, without the local
// stack (Lifecycles), timed (Latency). A cloud's <cloud>sim package
// brings its Phase, internal/clouds/cloudsdev lists it, and dev/bench
// runs each listed phase after the stack's phases: dev/bench names no
// cloud. The package is the contract between the two, so that neither
// imports the other (dev/bench is an entry point, imported by no one).
package providerbench

import (
	"context"
	"fmt"
	"io"
	"math"
	"slices"
	"time"

	"github.com/egress-proxies/egress/internal/pacing"
	"github.com/egress-proxies/egress/internal/provider"
)

// Phase is a cloud's phase of make bench: proxy lifecycles on the cloud's
// provider over its fake, as the reconciler drives one at its floor,
// counting the cloud's API requests, and the collector's listing of a
// large fleet. It needs no stack, and plays the VM side: every VM serves
// once booted.
type Phase interface {
	// Name is the phase's name in -phases, in the table of phases' times
	// and in the JSON's "clouds": the cloud's provider type.
	Name() string
	// Run plays n lifecycles and the listing, and returns the figures. An
	// error says which lifecycle or listing went wrong.
	Run(ctx context.Context, n int) (Result, error)
}

// Result is a phase's figures: make bench writes it as JSON into its
// -out file (under "clouds", by the phase's name) and prints Table.
type Result interface {
	// Table prints the figures for people, a line or two ending in a
	// newline.
	Table(w io.Writer)
}

// Reconfigure is a live change's figures, in the shape make bench reports
// Google Cloud's PATCH (its JSON's "reconfigure"): from each change's
// start to the proxy seen Ready, serving the generation the change made.
// A cloud's Result that measures live changes holds one under the same
// key, so that the two read alike.
type Reconfigure struct {
	ReadyMs Latency `json:"readyMs"`
}

// LiveChanges is a Result of a cloud whose VMs take a change in place (a
// PATCH lands without a new VM): make bench prints its PATCH → Ready row
// beside Google Cloud's, in the pool phase's table.
type LiveChanges interface {
	Result
	// LiveChange is what the row measures, said in a few words for its
	// label (what the times include and leave out, since they are not
	// the stack's), and the times.
	LiveChange() (what string, ready Latency)
}

// Lifecycles plays n proxy lifecycles on p, one after another, the i-th
// created by req(i): Create, a Get while the VM boots, a Get once the
// cloud settled that sees it serve, Delete, and a Get once the cloud
// settled that finds it gone (settle lets the fake finish what is in
// progress). It returns the time of each provider call.
func Lifecycles(ctx context.Context, p provider.Provider, settle func(), n int, req func(i int) provider.CreateRequest) ([]time.Duration, error) {
	var calls []time.Duration
	for i := range n {
		for _, step := range lifecycle(ctx, p, settle, req(i)) {
			start := time.Now()
			err := step()
			calls = append(calls, time.Since(start))
			if err != nil {
				return calls, fmt.Errorf("lifecycle %d: %w", i, err)
			}
		}
	}
	return calls, nil
}

// lifecycle is one proxy's life at the reconciler's floor, as Lifecycles
// drives it.
func lifecycle(ctx context.Context, p provider.Provider, settle func(), req provider.CreateRequest) []func() error {
	var id string
	return []func() error{
		func() (err error) { id, err = p.Create(ctx, req); return err },
		func() error { return expectState(p.Get(ctx, id))(provider.StateProvisioning) },
		func() error { settle(); return expectState(p.Get(ctx, id))(provider.StateRunning) },
		func() error { return p.Delete(ctx, id) },
		func() error {
			settle()
			if _, err := p.Get(ctx, id); provider.KindOf(err) != provider.KindNotFound {
				return fmt.Errorf("Get of the deleted %s: %v, want not found", id, err)
			}
			return nil
		},
	}
}

// expectState checks what a Get said.
func expectState(in *provider.Instance, err error) func(provider.InstanceState) error {
	return func(want provider.InstanceState) error {
		if err != nil {
			return err
		}
		if in.State != want {
			return fmt.Errorf("%s is %s, want %s", in.ID, in.State, want)
		}
		return nil
	}
}

// Latency is a sample of times, in milliseconds, as every phase of make
// bench reports one.
type Latency struct {
	P50 float64 `json:"p50"`
	P99 float64 `json:"p99"`
	Max float64 `json:"max"`
	N   int     `json:"n"`
}

// Summarize gives the percentiles of a sample.
func Summarize(ds []time.Duration) Latency {
	if len(ds) == 0 {
		return Latency{}
	}
	return Latency{P50: Ms(Percentile(ds, 50)), P99: Ms(Percentile(ds, 99)), Max: Ms(slices.Max(ds)), N: len(ds)}
}

// Percentile is the nearest-rank percentile p of ds.
func Percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	rank := int(math.Ceil(p / 100 * float64(len(s))))
	return s[max(rank, 1)-1]
}

// Ms is d in milliseconds, to a tenth.
func Ms(d time.Duration) float64 { return Round(float64(d)/float64(time.Millisecond), 1) }

// Round rounds v to places decimals.
func Round(v float64, places int) float64 {
	f := math.Pow(10, float64(places))
	return math.Round(v*f) / f
}

// CallsOf is what each method of p cost its cloud, in requests, as the
// cloud's fake counted them (requests: every request it was sent so
// far): two lifecycles as Lifecycles plays them, the second counted (a
// process that made calls before has what it keeps warm, such as an
// image's or a zone's lookup), the most of its Gets, and then a listing
// of what is left (a page). A cloud's test holds its plugin's
// pacing.Calls to it, so that the budget is spent by what the calls
// cost.
func CallsOf(ctx context.Context, p provider.Provider, settle func(), requests func() int, req func(i int) provider.CreateRequest) (pacing.Calls, error) {
	var c pacing.Calls
	for i := range 2 {
		for j, step := range lifecycle(ctx, p, settle, req(i)) {
			before := requests()
			if err := step(); err != nil {
				return c, fmt.Errorf("lifecycle %d: %w", i, err)
			}
			if i == 0 {
				continue
			}
			n := requests() - before
			switch j {
			case 0:
				c.Create = n
			case 3:
				c.Delete = n
			default:
				c.Get = max(c.Get, n)
			}
		}
	}
	before := requests()
	if _, err := p.ListByTag(ctx); err != nil {
		return c, fmt.Errorf("listing: %w", err)
	}
	c.ListByTag = requests() - before
	return c, nil
}
