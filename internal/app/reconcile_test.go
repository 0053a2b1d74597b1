package app_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/egress-proxies/egress/internal/app"
	"github.com/egress-proxies/egress/internal/reconcile"
)

func TestLoadReconcileOptions(t *testing.T) {
	cases := map[string]struct {
		reason  string
		env     map[string]string
		want    reconcile.Options
		wantErr string
	}{
		"Defaults": {
			reason: "nothing set: a minute's budget, waits from 2 s to 10 s, a lease that outlasts the run",
			env:    map[string]string{},
			want:   reconcile.Options{WaitBudget: time.Minute, LeaseDuration: 3 * time.Minute, InitialBackoff: 2 * time.Second, MaxBackoff: 10 * time.Second},
		},
		"AllSet": {
			reason: "every variable is read, and the lease follows the budget",
			env:    map[string]string{"RECONCILE_WAIT_BUDGET": "2m", "RECONCILE_INITIAL_BACKOFF": "400ms", "RECONCILE_MAX_BACKOFF": "2s"},
			want:   reconcile.Options{WaitBudget: 2 * time.Minute, LeaseDuration: 4 * time.Minute, InitialBackoff: 400 * time.Millisecond, MaxBackoff: 2 * time.Second},
		},
		"MaxBelowInitial": {
			reason:  "a longest wait shorter than the first is refused, naming both",
			env:     map[string]string{"RECONCILE_INITIAL_BACKOFF": "5s", "RECONCILE_MAX_BACKOFF": "1s"},
			wantErr: "config: RECONCILE_MAX_BACKOFF=1s is shorter than RECONCILE_INITIAL_BACKOFF=5s",
		},
		"ZeroBackoff": {
			reason:  "a zero wait would poll the provider in a busy loop",
			env:     map[string]string{"RECONCILE_INITIAL_BACKOFF": "0"},
			wantErr: `config: RECONCILE_INITIAL_BACKOFF="0" must be longer than zero`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := app.LoadReconcileOptions(env(tc.env))
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("%s\nerror = %v, want %q", tc.reason, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("%s\nunexpected error: %v", tc.reason, err)
			}
			if diff := cmp.Diff(tc.want, got, cmpopts.IgnoreFields(reconcile.Options{}, "Bootstrap", "Rand")); diff != "" {
				t.Errorf("%s\noptions (-want +got):\n%s", tc.reason, diff)
			}
		})
	}
}
