package vmside

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/internal/provider"
)

// TestObserve: what a VM's answer makes of it: no answer is
// Provisioning, an answer that it cannot serve Provisioning with its
// reason, one that it serves Running with its generation, an answer
// naming another instance no answer, and a cancelled context nothing
// learnt. The VM is asked with its uid and its own status id.
func TestObserve(t *testing.T) {
	type seen struct {
		State      provider.InstanceState
		BootError  string
		Generation int64
		Refused    int64
		Unanswered bool
		Err        provider.Kind
	}
	for name, tc := range map[string]struct {
		reason string
		st     Status
		err    error
		cancel bool
		want   seen
	}{
		"NoAnswer":     {"the VM still boots", Status{}, errors.New("connection refused"), false, seen{State: provider.StateProvisioning, Unanswered: true}},
		"CannotServe":  {"its bootstrap said why", Status{Error: "no engine"}, nil, false, seen{State: provider.StateProvisioning, BootError: "no engine"}},
		"Serves":       {"it serves generation 4", Status{Ready: true, Generation: 4}, nil, false, seen{State: provider.StateRunning, Generation: 4}},
		"CancelledCtx": {"the caller gave up", Status{}, context.Canceled, true, seen{State: provider.StateRunning, Err: provider.KindTransient}},
		"ItsInstance":  {"it names the instance asked about", Status{Ready: true, Generation: 4, Instance: "i-1"}, nil, false, seen{State: provider.StateRunning, Generation: 4}},
		"NoInstance":   {"it could not read its identity, and still serves", Status{Ready: true, Generation: 4}, nil, false, seen{State: provider.StateRunning, Generation: 4}},
		"Another":      {"the address still reaches the VM this one replaces", Status{Ready: true, Generation: 3, Instance: "i-0"}, nil, false, seen{State: provider.StateProvisioning, Unanswered: true}},
		"RefusedChange": {"it refused generation 5 handed to it in place and serves 4 still", Status{Ready: true, Generation: 4, Error: "generation 5: the self-test failed; the configuration served before is served still"}, nil, false,
			seen{State: provider.StateRunning, Generation: 4, Refused: 5, BootError: "generation 5: the self-test failed; the configuration served before is served still"}},
		"RefusedUserData": {"it refused a user data that names no generation, and serves 4 still", Status{Ready: true, Generation: 4, Error: "the user data is not one to apply: not base64; the configuration served before is served still"}, nil, false,
			seen{State: provider.StateRunning, Generation: 4}},
	} {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			if tc.cancel {
				cancel()
			}
			defer cancel()
			var asked string
			p := ProberFunc(func(_ context.Context, ip string, port int32, uid, id string) (Status, error) {
				asked = ip + "/" + uid + "/" + id
				return tc.st, tc.err
			})
			in := &provider.Instance{ID: "vm://1", IP: "198.51.100.7", UID: "u1", StatusID: "s1", State: provider.StateRunning}
			unanswered, err := Observe(ctx, p, in, 3128, "i-1")
			got := seen{State: in.State, BootError: in.BootError, Generation: in.Generation, Refused: in.RefusedGeneration, Unanswered: unanswered != nil, Err: provider.KindOf(err)}
			if diff := cmp.Diff(tc.want, got); diff != "" || asked != "198.51.100.7/u1/s1" {
				t.Errorf("%s: (-want +got):\n%s (asked %q)", tc.reason, diff, asked)
			}
		})
	}
}
