package main

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/egress-proxies/egress/internal/client"
	"github.com/egress-proxies/egress/internal/pricing"
	"github.com/egress-proxies/egress/internal/proxy"
)

// printProxy shows one proxy: the API's JSON with -o json, else its
// fields a person looks for, one per line.
func (c *cli) printProxy(p *proxy.Proxy) error {
	if c.output == "json" {
		return writeJSON(c.stdout, p)
	}
	ipPolicy := p.Spec.IPPolicy
	if ipPolicy == "" {
		ipPolicy = proxy.IPEphemeral
	}
	accessLog := "on"
	if !p.Spec.AccessLogOn() {
		accessLog = "off"
	}
	rows := [][2]string{
		{"name", p.Namespace + "/" + p.Name},
		{"uid", p.UID},
		{"phase", string(p.Status.Phase)},
		{"message", client.Message(p)},
		{"endpoint", p.Status.Endpoint},
		{"proxyURL", p.Status.ProxyURL},
		{"socks5URL", p.Status.Socks5URL},
		{"ipv6", p.Status.IPv6},
		{"ipv6Prefix", p.Status.IPv6Prefix},
		{"ipv6Egress", string(p.Spec.IPv6Egress)},
		{"region", p.Spec.Placement.Region},
		{"zone", p.Status.Zone},
		{"ipPolicy", string(ipPolicy)},
		{"allowedSourceRanges", strings.Join(p.Spec.AllowedSourceRanges, ", ")},
		{"connectPorts", client.ConnectPorts(p)},
		{"bandwidthLimit", p.Spec.BandwidthLimit},
		{"trafficQuota", p.Spec.TrafficQuota},
		{"accessLog", accessLog},
		{"maxAge", p.Spec.MaxAge},
		{"rotations", fmt.Sprint(p.Status.Rotations)},
	}
	// What the VM last reported of its traffic since its proxy started
	// (every 30 s, read when the reconciler looks at the VM).
	if t := p.Status.Traffic; t != nil {
		rows = append(rows,
			[2]string{"bytesIn", fmt.Sprintf("%d (%s, from clients)", t.BytesIn, byteSize(t.BytesIn))},
			[2]string{"bytesOut", fmt.Sprintf("%d (%s, to clients)", t.BytesOut, byteSize(t.BytesOut))},
			[2]string{"connections", fmt.Sprint(t.Connections)},
		)
		if t.Month != "" {
			// Both ways, in the month the VM counts: what the quota bounds.
			used := fmt.Sprintf("%d (%s both ways in %s", t.MonthBytes, byteSize(t.MonthBytes), t.Month)
			if q, err := proxy.ParseTrafficQuota(p.Spec.TrafficQuota); err == nil {
				used += fmt.Sprintf(", %.0f%% of the quota", 100*float64(t.MonthBytes)/float64(q))
			}
			rows = append(rows, [2]string{"monthBytes", used + ")"})
		}
		rows = append(rows,
			[2]string{"trafficReported", t.ReportTime.Format(time.RFC3339)})
	}
	rows = append(rows,
		[2]string{"cost", monthLine(p.Status.Cost)},
		[2]string{"requestedBy", p.RequestedBy},
		[2]string{"created", p.CreateTime.Format(time.RFC3339)})
	tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
	for _, r := range rows {
		if r[1] != "" {
			fmt.Fprintf(tw, "%s:\t%s\n", r[0], r[1])
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	// What the failed VM printed last (editors and owners see it), as it
	// came, one line each.
	if len(p.Status.ConsoleTail) > 0 {
		fmt.Fprintln(c.stdout, "consoleTail:")
		for _, l := range p.Status.ConsoleTail {
			fmt.Fprintln(c.stdout, "  "+l)
		}
	}
	return nil
}

// printProxies shows a list: {"proxies": […]} with -o json, as the API's
// page without its token, else a table.
func (c *cli) printProxies(list []proxy.Proxy) error {
	rows := make([][]string, len(list))
	for i, p := range list {
		ipPolicy := p.Spec.IPPolicy
		if ipPolicy == "" {
			ipPolicy = proxy.IPEphemeral
		}
		rows[i] = []string{p.Name, string(p.Status.Phase), dash(p.Status.Endpoint), dash(p.Status.Zone), string(ipPolicy), costColumn(p.Status.Cost), age(p.CreateTime)}
	}
	return printList(c, "proxies", list, []string{"NAME", "PHASE", "ENDPOINT", "ZONE", "IP", "COST", "AGE"}, rows)
}

// printPool shows one pool: the API's JSON with -o json, else its fields
// one per line.
func (c *cli) printPool(p *proxy.Pool) error {
	if c.output == "json" {
		return writeJSON(c.stdout, p)
	}
	rows := [][2]string{
		{"name", p.Name},
		{"provider", p.Spec.Provider},
		{"region", p.Spec.Placement.Region},
		{"zone", p.Spec.Placement.Zone},
		{"machineType", p.Spec.Placement.MachineType},
		{"image", p.Spec.Placement.Image},
		{"size", fmt.Sprint(p.Spec.Size)},
		{"claimsPerNamespacePerHour", positive(p.Spec.ClaimsPerNamespacePerHour)},
		{"warm", fmt.Sprint(p.Status.Warm)},
		{"booting", fmt.Sprint(p.Status.Booting)},
		{"claimsLastHour", fmt.Sprint(p.Status.ClaimsLastHour)},
		{"claimsLastHourByNamespace", byNamespace(p.Status.ClaimsLastHourByNamespace)},
		{"message", p.Status.Message},
		{"created", p.CreateTime.Format(time.RFC3339)},
	}
	if p.DeleteRequestTime != nil {
		rows = append(rows, [2]string{"deleting since", p.DeleteRequestTime.Format(time.RFC3339)})
	}
	tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
	for _, r := range rows {
		if r[1] != "" {
			fmt.Fprintf(tw, "%s:\t%s\n", r[0], r[1])
		}
	}
	return tw.Flush()
}

// positive is n in decimal, or "" (a row not shown) for none.
func positive(n int) string {
	if n <= 0 {
		return ""
	}
	return fmt.Sprint(n)
}

// byNamespace is a count by namespace as one line, "team-a=2 team-b=1",
// ordered by namespace.
func byNamespace(counts map[string]int) string {
	parts := make([]string, 0, len(counts))
	for _, ns := range slices.Sorted(maps.Keys(counts)) {
		parts = append(parts, fmt.Sprintf("%s=%d", ns, counts[ns]))
	}
	return strings.Join(parts, " ")
}

func (c *cli) printPools(list []proxy.Pool) error {
	rows := make([][]string, len(list))
	for i, p := range list {
		rows[i] = []string{p.Name, p.Spec.Provider, p.Spec.Placement.Region, dash(p.Spec.Placement.Zone),
			fmt.Sprint(p.Spec.Size), fmt.Sprint(p.Status.Warm), fmt.Sprint(p.Status.Booting), age(p.CreateTime)}
	}
	return printList(c, "pools", list, []string{"NAME", "PROVIDER", "REGION", "ZONE", "SIZE", "WARM", "BOOTING", "AGE"}, rows)
}

func (c *cli) printNamespace(n *client.Namespace) error {
	if c.output == "json" {
		return writeJSON(c.stdout, n)
	}
	tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "name:\t%s\n", n.Name)
	fmt.Fprintf(tw, "proxies:\t%d of %d\n", n.ProxyCount, n.Quota)
	if n.Month != nil {
		fmt.Fprintf(tw, "month:\t%s\n", monthLine(n.Month))
	}
	if b := n.Budget; b != nil {
		at := b.AtBudget
		if at == "" {
			at = "refuseNew"
		}
		fmt.Fprintf(tw, "budget:\t%s %s a month, %s at it\n", b.Monthly, b.Currency, at)
	}
	if st := n.TrafficStopped; st != nil {
		fmt.Fprintf(tw, "traffic:\tstopped for %s: %s\n", st.Month, st.Reason)
	}
	fmt.Fprintln(tw, "members:")
	for _, email := range slices.Sorted(maps.Keys(n.Members)) {
		fmt.Fprintf(tw, "  %s\t%s\n", email, n.Members[email])
	}
	return tw.Flush()
}

func (c *cli) printNamespaces(list []client.Namespace) error {
	rows := make([][]string, len(list))
	for i, n := range list {
		rows[i] = []string{n.Name, fmt.Sprint(n.ProxyCount), fmt.Sprint(n.Quota), fmt.Sprint(len(n.Members))}
	}
	return printList(c, "namespaces", list, []string{"NAME", "PROXIES", "QUOTA", "MEMBERS"}, rows)
}

// printList shows a list: {"KIND": […]} with -o json, as the API's page
// without its token, else a table of the rows under the header.
func printList[T any](c *cli, kind string, list []T, header []string, rows [][]string) error {
	if c.output == "json" {
		if list == nil {
			list = []T{}
		}
		return writeJSON(c.stdout, map[string][]T{kind: list})
	}
	if len(list) == 0 {
		_, err := fmt.Fprintf(c.stdout, "No %s.\n", kind)
		return err
	}
	tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	return tw.Flush()
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// byteSize is n bytes for a person: 1.5 MB, in SI multiples as the
// traffic of a link is counted.
func byteSize(n int64) string {
	const unit = 1000
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit && exp < 4; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %cB", float64(n)/float64(div), "kMGTP"[exp])
}

// costColumn is a proxy's month in a list: the month so far and its
// forecast, to the cent ("3.91/7.82 EUR"), "unknown" when it cannot be
// known (proxies get says why), "-" where the deployment costs nothing.
func costColumn(c *pricing.Cost) string {
	switch {
	case c == nil:
		return "-"
	case c.Unknown != "":
		return "unknown"
	}
	return fmt.Sprintf("%s/%s %s", cents(c.MonthToDate), cents(c.Forecast), c.Currency)
}

// cents is m to the cent, without its currency.
func cents(m pricing.Money) string { return m.ToCent() }

// monthLine is a cost's month as one line: "2026-12: 3.91 EUR so far,
// 7.82 EUR forecast (VM 2.16, address 0.00, traffic 1.75)".
func monthLine(c *pricing.Cost) string {
	if c == nil {
		return ""
	}
	if c.Unknown != "" {
		return fmt.Sprintf("%s: unknown (%s); known: %s %s so far, %s %s forecast", c.Month, c.Unknown, cents(c.MonthToDate), c.Currency, cents(c.Forecast), c.Currency)
	}
	return fmt.Sprintf("%s: %s %s so far, %s %s forecast (VM %s, address %s, traffic %s)", c.Month, cents(c.MonthToDate), c.Currency,
		cents(c.Forecast), c.Currency, cents(c.VM), cents(c.Address), cents(c.Traffic))
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// age is kubectl's short age: 45s, 12m, 5h, 3d.
func age(t time.Time) string {
	d := time.Since(t)
	switch {
	case t.IsZero():
		return "-"
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d.Hours()))
	}
	return fmt.Sprintf("%dd", int(d.Hours()/24))
}
