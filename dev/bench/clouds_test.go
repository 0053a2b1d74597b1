package main

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/egress-proxies/egress/internal/provider/providerbench"
)

// TestCloudPhases: every cloud internal/clouds/cloudsdev lists is a phase
// of the run, between the pool phases and the collector's; its figures
// land in the JSON under "clouds" by its name and in the table, and a
// run whose -phases leaves a cloud out prints no table of it. A cloud
// whose phase times live changes reports them under Google Cloud's key
// for its PATCH (reconfigure.readyMs), and its row beside Google Cloud's
// in the pool phase's table; one cloud at least does.
func TestCloudPhases(t *testing.T) {
	if len(cloudPhases) == 0 {
		t.Fatal("cloudsdev lists no cloud: the benchmark has no cloud's phase to run")
	}
	pool, gc := slices.Index(allPhases, phasePool), slices.Index(allPhases, phaseGC)
	b := &bench{s: settings{lifecycles: 1}}
	r := &results{}
	for _, ph := range cloudPhases {
		if i := slices.Index(allPhases, ph.Name()); i < pool || i > gc {
			t.Errorf("phase %s is at %d of %v, want between %s and %s", ph.Name(), i, allPhases, phasePool, phaseGC)
		}
		if err := b.cloud(ph)(context.Background(), r); err != nil {
			t.Fatalf("phase %s: %v", ph.Name(), err)
		}
	}
	raw, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	live := 0
	for _, ph := range cloudPhases {
		if _, ok := lookup(doc, "clouds."+ph.Name()+".lifecycles").(float64); !ok {
			t.Errorf("the JSON has no clouds.%s.lifecycles: %s", ph.Name(), raw)
		}
		if _, ok := r.Clouds[ph.Name()].(providerbench.LiveChanges); ok {
			live++
			if _, ok := lookup(doc, "clouds."+ph.Name()+".reconfigure.readyMs.p99").(float64); !ok {
				t.Errorf("the JSON has no clouds.%s.reconfigure.readyMs.p99, the key of Google Cloud's PATCH (reconfigure.readyMs.p99): %s", ph.Name(), raw)
			}
		}
	}
	if live == 0 {
		t.Error("no cloud's phase measures a live change: make bench reports no PATCH beside Google Cloud's")
	}

	for _, ph := range cloudPhases {
		var all, without strings.Builder
		r.Settings.Phases = allPhases
		r.table(&all)
		r.Settings.Phases = slices.DeleteFunc(slices.Clone(allPhases), func(p string) bool { return p == ph.Name() })
		r.table(&without)
		var own strings.Builder
		r.Clouds[ph.Name()].Table(&own)
		// A live change's row sits in the pool phase's table, beside
		// Google Cloud's PATCH, when the cloud's phase ran.
		if _, ok := r.Clouds[ph.Name()].(providerbench.LiveChanges); ok {
			row := "PATCH → Ready, new generation, " + ph.Name() + ":"
			if !strings.Contains(all.String(), row) || strings.Contains(without.String(), row) {
				t.Errorf("phase %s's PATCH row %q: in the table of every phase %t, want true; in the table without it %t, want false",
					ph.Name(), row, strings.Contains(all.String(), row), strings.Contains(without.String(), row))
			}
		}
		if !strings.Contains(all.String(), own.String()) || strings.Contains(without.String(), own.String()) {
			t.Errorf("phase %s's table %q: in the table of every phase %t, want true; in the table without it %t, want false",
				ph.Name(), own.String(), strings.Contains(all.String(), own.String()), strings.Contains(without.String(), own.String()))
		}
	}
}
