package console

import (
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/egress-proxies/egress/internal/proxy"
)

// Sample is one traffic report of a proxy's VM.
type Sample struct {
	Time        time.Time
	BytesIn     int64
	BytesOut    int64
	Connections int64
}

// History keeps the last traffic reports the console has seen of each
// proxy (by uid): at most perProxy of each, for at most proxies proxies,
// forgetting the proxy seen first when a new one comes.
type History struct {
	mu       sync.Mutex
	perProxy int
	proxies  int
	byUID    map[string][]Sample
	order    []string
}

// NewHistory returns an empty history.
func NewHistory(perProxy, proxies int) *History {
	return &History{perProxy: perProxy, proxies: proxies, byUID: map[string][]Sample{}}
}

// Record adds p's last report, when it is new, and returns p's history.
func (h *History) Record(p *proxy.Proxy) []Sample {
	h.mu.Lock()
	defer h.mu.Unlock()
	s, known := h.byUID[p.UID]
	if t := p.Status.Traffic; t != nil && (len(s) == 0 || t.ReportTime.After(s[len(s)-1].Time)) {
		s = append(s, Sample{Time: t.ReportTime, BytesIn: t.BytesIn, BytesOut: t.BytesOut, Connections: t.Connections})
		if len(s) > h.perProxy {
			s = s[len(s)-h.perProxy:]
		}
		if !known {
			h.order = append(h.order, p.UID)
			if len(h.order) > h.proxies {
				delete(h.byUID, h.order[0])
				h.order = h.order[1:]
			}
		}
		h.byUID[p.UID] = s
	}
	return append([]Sample(nil), s...)
}

// chart is a traffic history drawn as an inline SVG: the rate in and out
// between consecutive reports.
type chart struct {
	Width, Height int
	In, Out       string // polyline points
	Peak          string // the highest rate, for the axis
	From, To      time.Time
	Summary       string
	Samples       int
}

// drawChart draws samples; nil when there are too few to draw a rate.
func drawChart(samples []Sample) *chart {
	if len(samples) < 2 {
		return nil
	}
	type rate struct {
		t       time.Time
		in, out float64
	}
	var rates []rate
	peak := 1.0
	for i := 1; i < len(samples); i++ {
		a, b := samples[i-1], samples[i]
		secs := b.Time.Sub(a.Time).Seconds()
		if secs <= 0 {
			continue
		}
		// A counter that went down is a VM that started over.
		in, out := float64(b.BytesIn-a.BytesIn)/secs, float64(b.BytesOut-a.BytesOut)/secs
		if b.BytesIn < a.BytesIn || b.BytesOut < a.BytesOut {
			in, out = float64(b.BytesIn)/secs, float64(b.BytesOut)/secs
		}
		rates = append(rates, rate{b.Time, in, out})
		peak = max(peak, in, out)
	}
	if len(rates) == 0 {
		return nil
	}
	c := &chart{Width: 600, Height: 120, From: samples[0].Time, To: samples[len(samples)-1].Time, Samples: len(samples)}
	span := c.To.Sub(c.From).Seconds()
	var in, out []string
	var sumIn, sumOut float64
	for _, r := range rates {
		x := float64(c.Width) * r.t.Sub(c.From).Seconds() / span
		in = append(in, fmt.Sprintf("%.1f,%.1f", x, float64(c.Height)*(1-r.in/peak)))
		out = append(out, fmt.Sprintf("%.1f,%.1f", x, float64(c.Height)*(1-r.out/peak)))
		sumIn += r.in
		sumOut += r.out
	}
	c.In, c.Out = strings.Join(in, " "), strings.Join(out, " ")
	c.Peak = humanBytes(int64(peak)) + "/s"
	n := float64(len(rates))
	c.Summary = fmt.Sprintf("Over %d reports: on average %s/s in and %s/s out; at most %s.", len(samples), humanBytes(int64(sumIn/n)), humanBytes(int64(sumOut/n)), c.Peak)
	return c
}
