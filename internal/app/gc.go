package app

import (
	"fmt"
	"strconv"
	"time"

	"github.com/egress-proxies/egress/internal/gc"
)

// LoadGCOptions reads and validates the CollectGarbage configuration:
//
//	GC_GRACE_PERIOD     age under which an unclaimed VM is kept (default 10m, > 0)
//	GC_PARALLELISM      deletes and requeues in flight at once (default 16, ≥ 1)
//	GC_DRY_RUN          report what would be deleted, delete nothing (default false)
//	GC_SWEEP_THRESHOLD  time without progress before a document is re-driven (default 2m, > 0)
func LoadGCOptions(getenv Getenv) (gc.Options, error) {
	o := gc.Options{SweepLimit: gc.DefaultSweepLimit}
	var err error
	if o.GracePeriod, err = positiveDuration(getenv, "GC_GRACE_PERIOD", gc.DefaultGracePeriod); err != nil {
		return o, err
	}
	if o.SweepThreshold, err = positiveDuration(getenv, "GC_SWEEP_THRESHOLD", gc.DefaultSweepThreshold); err != nil {
		return o, err
	}
	o.Parallelism = gc.DefaultParallelism
	if v := getenv("GC_PARALLELISM"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return o, fmt.Errorf("config: GC_PARALLELISM=%q is not a whole number of at least 1", v)
		}
		o.Parallelism = n
	}
	if v := getenv("GC_DRY_RUN"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return o, fmt.Errorf("config: GC_DRY_RUN=%q is not a boolean: want true or false", v)
		}
		o.DryRun = b
	}
	return o, nil
}

// positiveDuration is Duration refusing zero, which is far likelier a slip
// than a wish: a zero grace period would let a run delete a VM mid-create,
// and a zero threshold re-drive every unsettled document on every run.
func positiveDuration(getenv Getenv, name string, def time.Duration) (time.Duration, error) {
	d, err := Duration(getenv, name, def)
	if err != nil {
		return 0, err
	}
	if d == 0 {
		return 0, fmt.Errorf("config: %s=%q must be longer than zero", name, getenv(name))
	}
	return d, nil
}
