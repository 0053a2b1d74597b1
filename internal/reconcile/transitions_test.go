package reconcile_test

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/internal/proxy"
	"github.com/egress-proxies/egress/internal/reconcile"
)

func TestTransitionEdges(t *testing.T) {
	cases := map[string]struct {
		reason string
		row    reconcile.Transition
		want   []reconcile.Edge
	}{
		"StaysPut": {
			reason: "a row with no To leaves the document in its phase: no change",
			row:    reconcile.Transition{From: []proxy.Phase{proxy.PhaseReady}},
		},
		"EveryPhase": {
			reason: "a row with no From applies in every phase, and a phase to itself is no change",
			row:    reconcile.Transition{To: []proxy.Phase{proxy.PhaseFailed}},
			want: []reconcile.Edge{{proxy.PhasePending, proxy.PhaseFailed}, {proxy.PhaseCreating, proxy.PhaseFailed},
				{proxy.PhaseProvisioning, proxy.PhaseFailed}, {proxy.PhaseReady, proxy.PhaseFailed}, {proxy.PhaseReconfiguring, proxy.PhaseFailed},
				{proxy.PhaseReplacing, proxy.PhaseFailed}, {proxy.PhaseDeleting, proxy.PhaseFailed}},
		},
		"EachToEach": {
			reason: "each of From to each of To",
			row:    reconcile.Transition{From: []proxy.Phase{proxy.PhaseProvisioning}, To: []proxy.Phase{proxy.PhaseReplacing, proxy.PhaseFailed}},
			want:   []reconcile.Edge{{proxy.PhaseProvisioning, proxy.PhaseReplacing}, {proxy.PhaseProvisioning, proxy.PhaseFailed}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, tc.row.Edges()); diff != "" {
				t.Errorf("%s\nEdges() (-want +got):\n%s", tc.reason, diff)
			}
		})
	}
}

// TestTransitionsAreWellFormed: each row says what it sees and does, names
// only phases (and the table's two ends where they can be), and a row that
// changes a phase has the label the state diagram shows.
func TestTransitionsAreWellFormed(t *testing.T) {
	known := func(p proxy.Phase) bool { return slices.Contains(proxy.Phases, p) }
	for i, row := range reconcile.Transitions {
		if row.Sees == "" || row.Does == "" {
			t.Errorf("row %d: says neither what it sees nor what it does: %+v", i, row)
		}
		for _, p := range row.From {
			if !known(p) && p != reconcile.Start {
				t.Errorf("row %d (%s): from %q, no phase", i, row.Sees, p)
			}
		}
		for _, p := range row.To {
			if !known(p) && p != reconcile.Gone {
				t.Errorf("row %d (%s): to %q, no phase", i, row.Sees, p)
			}
		}
		if changes := len(row.Edges()) > 0; changes != (row.Label != "") {
			t.Errorf("row %d (%s): changes a phase: %v, but its label is %q: a row that changes one is labelled, and only such a row", i, row.Sees, changes, row.Label)
		}
	}
}
