package app_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/internal/app"
	"github.com/egress-proxies/egress/internal/gc"
)

func TestLoadGCOptions(t *testing.T) {
	defaults := gc.Options{GracePeriod: 10 * time.Minute, Parallelism: 16, SweepThreshold: 2 * time.Minute, SweepLimit: gc.DefaultSweepLimit}
	cases := map[string]struct {
		reason  string
		env     map[string]string
		want    gc.Options
		wantErr string
	}{
		"Defaults": {
			reason: "nothing set: 10m grace, 16 in flight, no dry run, 2m threshold",
			env:    map[string]string{},
			want:   defaults,
		},
		"AllSet": {
			reason: "every variable is read",
			env:    map[string]string{"GC_GRACE_PERIOD": "30m", "GC_PARALLELISM": "4", "GC_DRY_RUN": "true", "GC_SWEEP_THRESHOLD": "90s"},
			want:   gc.Options{GracePeriod: 30 * time.Minute, Parallelism: 4, DryRun: true, SweepThreshold: 90 * time.Second, SweepLimit: gc.DefaultSweepLimit},
		},
		"BadGrace": {
			reason:  "a grace period that does not parse names the variable",
			env:     map[string]string{"GC_GRACE_PERIOD": "ten minutes"},
			wantErr: `config: GC_GRACE_PERIOD="ten minutes" is not a duration: want Go's syntax, such as 2s or 10m`,
		},
		"ZeroGrace": {
			reason:  "a zero grace period is refused",
			env:     map[string]string{"GC_GRACE_PERIOD": "0s"},
			wantErr: `config: GC_GRACE_PERIOD="0s" must be longer than zero`,
		},
		"ZeroThreshold": {
			reason:  "a zero sweep threshold is refused",
			env:     map[string]string{"GC_SWEEP_THRESHOLD": "0"},
			wantErr: `config: GC_SWEEP_THRESHOLD="0" must be longer than zero`,
		},
		"ZeroParallelism": {
			reason:  "parallelism below one is refused",
			env:     map[string]string{"GC_PARALLELISM": "0"},
			wantErr: `config: GC_PARALLELISM="0" is not a whole number of at least 1`,
		},
		"WordParallelism": {
			reason:  "parallelism that is not a number is refused",
			env:     map[string]string{"GC_PARALLELISM": "many"},
			wantErr: `config: GC_PARALLELISM="many" is not a whole number of at least 1`,
		},
		"BadDryRun": {
			reason:  "a dry run flag that is not a boolean is refused",
			env:     map[string]string{"GC_DRY_RUN": "yes please"},
			wantErr: `config: GC_DRY_RUN="yes please" is not a boolean: want true or false`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := app.LoadGCOptions(env(tc.env))
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("%s\nerror = %v, want %q", tc.reason, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("%s\nunexpected error: %v", tc.reason, err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\noptions (-want +got):\n%s", tc.reason, diff)
			}
		})
	}
}
