package engine

import (
	"crypto/hmac"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"regexp"
	"time"

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
//
// On a cloud whose VMs take no configuration in place, the stop comes as
// an order on the status door instead (vmconfig.TrafficOrder: PUT
// http://egress-status.invalid/traffic), signed with the VM's sign key,
// which only the control plane and the VM hold: the status password,
// which travels in clear, opens no stop. An order taken overrides the
// configuration's stop until the engine restarts (a reboot forgets it;
// the collector's next tick, minutes away, tells the VM again). An order
// issued more than vmconfig.OrderSkew away from the engine's clock, or
// not after the last one taken, is refused: one seen on the path and
// sent again changes nothing.

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
	st := r.trafficStop
	if o := s.order.Load(); o != nil {
		st = o.Stop
	}
	if st == nil {
		return nil
	}
	if month, _ := s.month.used(s.total()); month != st.Month {
		return nil
	}
	return st
}

// takeOrder checks a traffic order of req (a status request whose
// credential and nonce were checked) and serves it: see the top of this
// file.
func (s *Server) takeOrder(r *rules, nonce string, req *http.Request) error {
	text := req.Header.Get(vmconfig.TrafficOrderHeader)
	want := vmconfig.SignOrder(r.status.signKey, nonce, req.Method, req.URL.RequestURI(), text)
	if got := req.Header.Get(vmconfig.TrafficOrderSignatureHeader); !hmac.Equal([]byte(got), []byte(want)) {
		return errors.New("the order is not signed with this VM's sign key over this request")
	}
	raw, err := base64.RawURLEncoding.DecodeString(text)
	if err != nil {
		return fmt.Errorf("the order is not base64 (URL alphabet, unpadded): %w", err)
	}
	var o vmconfig.TrafficOrder
	if err := json.Unmarshal(raw, &o); err != nil {
		return fmt.Errorf("the order is not a TrafficOrder: %w", err)
	}
	if err := checkStop(o.Stop); err != nil {
		return err
	}
	now := s.month.now()
	if d := now.Sub(o.Issued); d > vmconfig.OrderSkew || d < -vmconfig.OrderSkew {
		return fmt.Errorf("the order was issued at %s, more than %s from this VM's clock (%s)", o.Issued.UTC().Format(time.RFC3339), vmconfig.OrderSkew, now.UTC().Format(time.RFC3339))
	}
	s.orderMu.Lock()
	defer s.orderMu.Unlock()
	if last := s.order.Load(); last != nil && !o.Issued.After(last.Issued) {
		return fmt.Errorf("the order was issued at %s, not after the last one taken (%s)", o.Issued.UTC().Format(time.RFC3339Nano), last.Issued.UTC().Format(time.RFC3339Nano))
	}
	s.order.Store(&o)
	s.log.Info("traffic order taken", slog.Any("trafficStop", o.Stop), slog.Time("issued", o.Issued))
	return nil
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
