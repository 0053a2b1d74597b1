package engine

import (
	"fmt"
	"regexp"

	"github.com/egress-proxies/egress/internal/vm/vmconfig"
)

// The budget's stop (vmconfig.Config.TrafficStop): once the proxy's
// namespace spent its month's budget and chose tenancy.StopTraffic, the
// control plane hands the engine a stop for that month, and every new
// connection or request is refused as at the traffic quota, 403
// budget-exceeded (SOCKS5 reply 2) with its access line, before any
// destination is resolved or dialled; the tunnels and connections open
// when it came finish as they would have. The stop names its month and
// holds only while the engine's clock is in it: the month's turn lifts
// it on the VM itself, even if the control plane cannot reach the VM
// then. A raised budget lifts it with a configuration that carries none.

var stopMonth = regexp.MustCompile(`^[0-9]{4}-(0[1-9]|1[0-2])$`)

// checkStop holds a configuration's stop to its form.
func checkStop(st *vmconfig.TrafficStop) error {
	if st != nil && !stopMonth.MatchString(st.Month) {
		return fmt.Errorf("engine: trafficStop.month: %q is not a month such as 2026-12", st.Month)
	}
	return nil
}

// stopHolds returns r's stop while it holds: its month is the month
// counted now. Nil: no stop.
func (s *Server) stopHolds(r *rules) *vmconfig.TrafficStop {
	if r.trafficStop == nil {
		return nil
	}
	if month, _ := s.month.used(s.total()); month != r.trafficStop.Month {
		return nil
	}
	return r.trafficStop
}

// refusedBefore is the refusal every new connection or request of an
// authenticated client gets before it is carried, if any: the budget's
// stop first (it is the namespace's, and says why the quota would not
// matter), then the proxy's quota.
func (s *Server) refusedBefore(r *rules) (reply, bool) {
	switch {
	case s.stopHolds(r) != nil:
		return ansBudgetExceeded, true
	case s.quotaSpent(r):
		return ansQuotaExceeded, true
	}
	return reply{}, false
}
