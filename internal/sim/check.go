package sim

import (
	"context"
	"slices"
	"sort"
	"time"

	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/proxy"
)

func readyReason(p *proxy.Proxy) string {
	for _, c := range p.Status.Conditions {
		if c.Type == proxy.ConditionReady {
			return c.Reason
		}
	}
	return ""
}

// check states the invariants once faults have stopped and time has run on.
func (w *World) check() {
	ctx := context.Background()
	// Every VM and address of every provider, this deployment's or not,
	// for the leaks and another deployment's resources below.
	all := [][]provider.Instance{w.mock.Instances(), w.mock.Addresses()}
	instances := w.own()
	for _, c := range w.clouds {
		ins := c.Instances()
		for _, in := range ins {
			if in.Deployment == provider.DefaultDeployment {
				instances = append(instances, in)
			}
		}
		all = append(all, ins, c.Addresses())
	}
	w.stats.InstancesAtEnd = len(instances)
	byUID := map[string][]provider.Instance{}
	for _, in := range instances {
		byUID[in.UID] = append(byUID[in.UID], in)
	}
	live := map[string]bool{}
	for _, key := range w.store.Keys() {
		p, err := w.store.Get(ctx, key)
		if err != nil {
			continue
		}
		live[p.UID] = true
		if p.ClaimedBy != nil {
			// A tombstone: its VM is the proxy's that claimed it.
			continue
		}
		if p.DeleteRequestTime != nil {
			w.violation("%s: deletion requested but the document remains (phase %s)", key, p.Status.Phase)
			continue
		}
		mine := byUID[p.UID]
		switch p.Status.Phase {
		case proxy.PhaseReady:
			w.stats.ReadyAtEnd++
			for i, c := range w.clouds {
				if c.Owns(p.Status.ProviderID) {
					w.stats.Clouds[i].ReadyAtEnd++
				}
			}
		case proxy.PhaseFailed:
			w.stats.FailedAtEnd++
		}
		if p.Status.Phase == proxy.PhaseFailed {
			// Whatever it failed of, a Failed proxy costs nothing: once
			// things settle no VM carries its uid and it names none, and
			// its status still says why.
			if len(mine) != 0 || p.Status.ProviderID != "" {
				w.violation("%s: Failed (%s) but %d instances carry its uid and it names %q, want none", key, p.Status.Message, len(mine), p.Status.ProviderID)
			}
			if p.Status.Message == "" {
				w.violation("%s: Failed with no message saying why", key)
			}
		}
		switch {
		case p.Status.Phase == proxy.PhaseFailed && (p.Reconciler.BootFailures >= maxBootFailures || readyReason(p) == "CreateFailed"):
			// A proxy whose VMs never became ready, or whose create can
			// never succeed (a missing image), ends Failed — never
			// stranded.
		case p.Status.Phase != proxy.PhaseReady:
			w.violation("%s: phase %s after faults stopped, want Ready, or Failed after %d boot failures (%s)", key, p.Status.Phase, maxBootFailures, p.Status.Message)
		case len(mine) != 1:
			w.violation("%s: %d instances carry its uid, want exactly 1", key, len(mine))
		case mine[0].ID != p.Status.ProviderID || mine[0].State != provider.StateRunning:
			w.violation("%s: status names %s, but its instance is %s (%s)", key, p.Status.ProviderID, mine[0].ID, mine[0].State)
		case p.RotateRequestTime != nil && p.Reconciler.BootStart.Before(*p.RotateRequestTime):
			// A rotation asked for is never lost: the VM is newer than the
			// last request.
			w.violation("%s: rotation asked for at %s, but its VM dates from %s", key, p.RotateRequestTime.Format(time.TimeOnly), p.Reconciler.BootStart.Format(time.TimeOnly))
		}
		if p.Status.Phase == proxy.PhaseReady && len(mine) == 1 && mine[0].ID == p.Status.ProviderID {
			w.checkServed(key, p, mine[0])
		}
		if old := w.uids[key.Name]; len(old) > 1 {
			for _, u := range old[:len(old)-1] {
				if p.Status.ProviderID != "" && len(byUID[u]) > 0 && byUID[u][0].ID == p.Status.ProviderID {
					w.violation("%s: the re-created document adopted the VM of its predecessor uid %s", key, u)
				}
			}
		}
	}
	w.checkPools(ctx, byUID)
	w.checkBudget()
	var leaked []string
	present := map[string]bool{}
	for _, in := range slices.Concat(all...) {
		present[in.ID] = true
		if in.Deployment != provider.DefaultDeployment {
			continue // another deployment's, or unlabelled: never ours to collect
		}
		if !live[in.UID] && w.clock.Now().Sub(in.CreatedAt) > gracePeriod {
			leaked = append(leaked, in.ID)
		}
	}
	for _, id := range w.foreign {
		if !present[id] {
			w.violation("%s, which another deployment made or which has no deployment label, is gone", id)
		}
	}
	sort.Strings(leaked)
	for _, id := range leaked {
		w.violation("instance %s is older than the grace period and claimed by no document (leaked)", id)
	}
}

func (w *World) isActive(in *inv) bool { return slices.Contains(w.active, in) }
