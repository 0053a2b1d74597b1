package reconcile

import (
	"time"

	"github.com/egress-proxies/egress/internal/proxy"
)

// setReady sets the Ready condition; its transition time moves only when its
// status does, so a condition rewritten with the same status does not flap.
func setReady(p *proxy.Proxy, status, reason, message string, now time.Time) {
	c := proxy.Condition{Type: proxy.ConditionReady, Status: status, Reason: reason, Message: message, LastTransitionTime: now}
	for i, old := range p.Status.Conditions {
		if old.Type == c.Type {
			if old.Status == c.Status {
				c.LastTransitionTime = old.LastTransitionTime
			}
			p.Status.Conditions[i] = c
			return
		}
	}
	p.Status.Conditions = append(p.Status.Conditions, c)
}

func port(s proxy.Spec) int32 {
	if s.Port == 0 {
		return proxy.DefaultPort
	}
	return s.Port
}
