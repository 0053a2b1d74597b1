package console

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/internal/proxy"
)

// TestHistory: a report is kept once, the last perProxy of each proxy,
// for the last proxies seen; the chart draws the rate between reports.
func TestHistory(t *testing.T) {
	h := NewHistory(3, 2)
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	report := func(uid string, sec int, in, out int64) []Sample {
		return h.Record(&proxy.Proxy{UID: uid, Status: proxy.Status{Traffic: &proxy.Traffic{BytesIn: in, BytesOut: out, ReportTime: at.Add(time.Duration(sec) * time.Second)}}})
	}
	report("a", 0, 0, 0)
	report("a", 0, 0, 0) // the same report again: kept once
	report("a", 30, 3000, 6000)
	report("a", 60, 9000, 12000)
	got := report("a", 90, 9000, 12000)
	want := []Sample{
		{Time: at.Add(30 * time.Second), BytesIn: 3000, BytesOut: 6000},
		{Time: at.Add(60 * time.Second), BytesIn: 9000, BytesOut: 12000},
		{Time: at.Add(90 * time.Second), BytesIn: 9000, BytesOut: 12000},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("a's history (-want +got):\n%s", diff)
	}
	report("b", 0, 1, 1)
	report("c", 0, 1, 1) // a third proxy: a, seen first, is forgotten
	if got := h.Record(&proxy.Proxy{UID: "a"}); len(got) != 0 {
		t.Errorf("a's history after two others: %d reports, want none", len(got))
	}
	c := drawChart(want)
	if c == nil || c.Peak != "200 B/s" || c.Summary != "Over 3 reports: on average 100 B/s in and 100 B/s out; at most 200 B/s." {
		t.Errorf("chart %+v", c)
	}
	if drawChart(want[:1]) != nil {
		t.Error("a chart of one report")
	}
}
