// Package bootstrap is the control plane's side of a VM's boot: it renders
// what turns a fresh VM into an egress proxy — a shell startup script,
// which Google's guest agent runs as root at every boot of every Google
// public Linux image (the images ship no cloud-init, so a #cloud-config
// would never run there), and the proxy engine's configuration
// (vmconfig.Config), which travels beside the script as the instance's
// egress-config metadata item. The reconciler renders both for each proxy
// and each warm pool's member (generation 0, no user, no source range: it
// serves no one until claimed), and the gcp provider sends them, with the
// attributes the script and the VM's agent read at run time (the Key
// constants of package vmconfig). The script's template, like everything
// else that runs on the VM, lives in internal/vm (vmconfig's
// startup-script.sh.tmpl). The script installs; the agent
// (internal/vm/agent) applies the configuration, at the first boot and at
// every change.
//
// Nothing either carries lets a reader of the instance's metadata use the
// proxy: the configuration holds the proxy's username and a salted hash of
// its password (vmconfig.HashPassword), never the password, which lives
// only in the proxy's document and reaches members as status.proxyURL.
//
// What the script does, every boot, in this order:
//   - clears egress/ready and egress/error: what a previous boot said no
//     longer holds;
//   - installs the proxy engine (cmd/egress-proxy) from the object
//     URL the metadata names, downloaded with the VM's own token and
//     checked against the SHA-256 the metadata carries, only when the
//     installed binary is not that one, and nftables only if missing; so a
//     second boot installs nothing;
//   - makes the engine's system user, keeps the journal in memory (no line
//     about the traffic lands on the disk), and writes the systemd units:
//     the engine (egress-proxy.service, run as that user, restarted
//     whenever it stops, loading the nftables filter before every start),
//     the configuration agent (egress-agent.service, `egress-proxy agent`,
//     as root) and the traffic report (egress-traffic.timer: the engine's
//     counters, vmconfig.Stats, every vmconfig.TrafficInterval in the guest
//     attribute egress/traffic, from root, since the proxy's own user
//     cannot reach the metadata server);
//   - runs the agent once (`egress-proxy agent -once`, package agent),
//     which applies egress-config: renders and loads the nftables filter
//     (ingress to the proxy port only from allowedSourceRanges and the VM
//     itself; egress of the proxy's user refused to the deny ranges,
//     vmconfig.DefaultDenyDestinations and the operator's own, and to
//     any port but the CONNECT ports, DNS to the resolvers excepted; the
//     engine checks the same ranges itself, the kernel's filter is the
//     second wall), writes the engine's configuration to /etc/egress-proxy
//     and starts the engine, proves the proxy (a request without
//     credentials gets 407; with credentials made for this apply and
//     dropped afterwards, a CONNECT to the metadata server is refused and
//     one to the probe target succeeds), writes egress/ready = the
//     generation it serves, and calls home: one message {namespace, name,
//     uid} ({pool, name, uid} on a warm pool's VM) on the call-home topic
//     (queue.CallHomeTopic), published with the VM's own service account,
//     so the reconciler looks at the VM at once rather than at its next
//     sweep. A failure writes egress/error with a one-line reason and
//     calls home (boot-failed) instead;
//   - starts the traffic timer and the agent, which follows egress-config
//     from then on and applies each change the same way without a new VM
//     (a PATCH, a credentials rotation, a warm pool's VM claimed by a
//     proxy).
//
// Every value of the request that reaches the script is validated here and
// single-quoted in it; every value the script reads from the metadata
// server is checked against a pattern before it is used. So no request,
// and no attribute, can inject shell.
package bootstrap

import (
	"bytes"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"text/template"

	"github.com/egress-proxies/egress/internal/proxy"
	"github.com/egress-proxies/egress/internal/vm/vmconfig"
)

// statsPort is the loopback port of the engine's counters, unless the
// proxy itself listens there.
const statsPort = 9901

// DefaultConnectPorts are the ports a CONNECT may reach when the spec names
// none (the proxy document's rule, proxy.DefaultConnectPorts).
var DefaultConnectPorts = proxy.DefaultConnectPorts

// Config is what the script and the engine's configuration are rendered
// from: one proxy's ports, sources, CONNECT ports, bandwidth limit, access
// log and credentials, and the operator's deny ranges. Its zero value
// asks for no SOCKS5, no bandwidth limit and the access log on, as a spec
// that says nothing does.
type Config struct {
	Port int32
	// Socks5Port, when set, is the port the engine serves SOCKS5 on
	// (spec.socks5Port); 0 serves none.
	Socks5Port int32
	// Socks5UDP carries SOCKS5 UDP ASSOCIATE on Socks5Port's number
	// (spec.socks5UDP).
	Socks5UDP bool
	// IPv6Egress is how connections to IPv6 destinations pick their
	// source (spec.ipv6Egress): off, single, perConnection or perSession;
	// "" as off, a document from before the field.
	IPv6Egress proxy.IPv6Egress
	// IPv6Prefix is the VM's routed IPv6 prefix (status.ipv6Prefix), a
	// CIDR, when the control plane knows it: not at a create, whose VM
	// has no prefix yet; "" then, and the VM's agent takes it from the
	// interface.
	IPv6Prefix string
	// BandwidthLimit bounds the proxy's traffic as
	// proxy.ParseBandwidth reads it ("100Mbit", spec.bandwidthLimit);
	// empty is no bound.
	BandwidthLimit string
	// TrafficQuota bounds the bytes the proxy carries a month as
	// proxy.ParseTrafficQuota reads it ("500GB", spec.trafficQuota);
	// empty is no bound.
	TrafficQuota string
	// AccessLogOff turns the engine's access log off (spec.accessLog
	// false). Off rather than on, so that a Config that does not say
	// keeps the log, as a spec that does not say does.
	AccessLogOff        bool
	AllowedSourceRanges []string
	// ConnectPorts are the ports a CONNECT may reach, and the only ports
	// the proxy may open connections to; empty means DefaultConnectPorts.
	ConnectPorts []int32
	Credentials  proxy.Credentials
	// DenyRanges are CIDRs no proxy may reach beyond
	// vmconfig.DefaultDenyDestinations (EGRESS_DENY_RANGES): the VPC's
	// own ranges, peered networks.
	DenyRanges []string
	// Generation is the generation of the proxy's configuration this is
	// (the document's generation; 0 for a warm pool's member, which serves
	// no one): the engine's configuration carries it, and the VM reports
	// it once it serves it.
	Generation int64
}

// ForProxy is the Config of a proxy's spec and credentials, with the
// operator's deny ranges.
func ForProxy(spec proxy.Spec, creds proxy.Credentials, denyRanges []string) Config {
	port := spec.Port
	if port == 0 {
		port = proxy.DefaultPort
	}
	return Config{Port: port, Socks5Port: spec.Socks5Port, Socks5UDP: spec.Socks5UDP, IPv6Egress: spec.IPv6Egress, BandwidthLimit: spec.BandwidthLimit, TrafficQuota: spec.TrafficQuota, AccessLogOff: !spec.AccessLogOn(),
		AllowedSourceRanges: spec.AllowedSourceRanges, ConnectPorts: spec.ConnectPorts, Credentials: creds, DenyRanges: denyRanges}
}

// rendered is Config checked and in the form the template writes.
type rendered struct {
	Port               int32
	Socks5Port         int32
	BandwidthBPS       int64
	TrafficQuotaBytes  int64
	Allow4, Allow6     []string
	Deny4, Deny6       []string
	ConnectPorts       []int32
	StatsPort          int
	DefaultProbeTarget string
	TrafficInterval    string
	EnginePath         string
	// CloudInit renders the script of a cloud-init boot (CloudInitScript)
	// rather than GCE's startup script; BootDir and ReadinessFile are its
	// places.
	CloudInit              bool
	BootDir, ReadinessFile string
}

func (c Config) check() (rendered, error) {
	r := rendered{Port: c.Port, Socks5Port: c.Socks5Port, DefaultProbeTarget: vmconfig.DefaultProbeTarget, TrafficInterval: vmconfig.TrafficInterval,
		EnginePath: vmconfig.EnginePath, StatsPort: statsPort}
	if c.Port < 1 || c.Port > 65535 {
		return r, fmt.Errorf("bootstrap: port %d is outside 1-65535", c.Port)
	}
	switch {
	case c.Socks5Port < 0 || c.Socks5Port > 65535:
		return r, fmt.Errorf("bootstrap: SOCKS5 port %d is outside 1-65535", c.Socks5Port)
	case c.Socks5Port == c.Port:
		return r, fmt.Errorf("bootstrap: SOCKS5 port %d is the HTTP port", c.Socks5Port)
	case c.Socks5UDP && c.Socks5Port == 0:
		return r, fmt.Errorf("bootstrap: SOCKS5 UDP without a SOCKS5 port")
	}
	switch c.IPv6Egress {
	case "", proxy.IPv6Off, proxy.IPv6Single, proxy.IPv6PerConnection, proxy.IPv6PerSession:
	default:
		return r, fmt.Errorf("bootstrap: IPv6 egress %q is none of %v", c.IPv6Egress, proxy.IPv6Egresses)
	}
	if c.IPv6Prefix != "" {
		if p, err := netip.ParsePrefix(c.IPv6Prefix); err != nil || !p.Addr().Is6() || p.Addr().Is4In6() || p != p.Masked() {
			return r, fmt.Errorf("bootstrap: IPv6 prefix %q is not an IPv6 network such as 2001:db8:1:2::/64", c.IPv6Prefix)
		}
	}
	// The counters take the first loopback port from statsPort on that
	// neither proxy port holds.
	for int32(r.StatsPort) == c.Port || int32(r.StatsPort) == c.Socks5Port {
		r.StatsPort++
	}
	if c.BandwidthLimit != "" {
		bps, err := proxy.ParseBandwidth(c.BandwidthLimit)
		if err != nil {
			return r, fmt.Errorf("bootstrap: %w", err)
		}
		r.BandwidthBPS = bps
	}
	if c.TrafficQuota != "" {
		b, err := proxy.ParseTrafficQuota(c.TrafficQuota)
		if err != nil {
			return r, fmt.Errorf("bootstrap: %w", err)
		}
		r.TrafficQuotaBytes = b
	}
	// A warm pool's VM (generation 0, no credentials) serves no one, so it
	// has no source to admit either: its member's spec names none
	// (proxy.PoolSpec.MemberSpec), and the filter then admits only the VM
	// itself, for the self-test. A proxy with none would serve nobody.
	member := c.Generation == 0 && c.Credentials == (proxy.Credentials{})
	if len(c.AllowedSourceRanges) == 0 && !member {
		return r, fmt.Errorf("bootstrap: no allowed source ranges: the proxy would serve nobody")
	}
	allow, err := prefixes("allowed source range", c.AllowedSourceRanges)
	if err != nil {
		return r, err
	}
	r.Allow4, r.Allow6 = byFamily(allow)
	deny, err := prefixes("deny range", c.DenyRanges)
	if err != nil {
		return r, err
	}
	for _, s := range vmconfig.DefaultDenyDestinations {
		deny = append(deny, netip.MustParsePrefix(s))
	}
	r.Deny4, r.Deny6 = byFamily(outermost(deny))
	r.ConnectPorts = slices.Clone(c.ConnectPorts)
	if len(r.ConnectPorts) == 0 {
		r.ConnectPorts = slices.Clone(DefaultConnectPorts)
	}
	for _, p := range r.ConnectPorts {
		if p < 1 || p > 65535 {
			return r, fmt.Errorf("bootstrap: CONNECT port %d is outside 1-65535", p)
		}
	}
	slices.Sort(r.ConnectPorts)
	r.ConnectPorts = slices.Compact(r.ConnectPorts)
	if c.Generation < 0 {
		return r, fmt.Errorf("bootstrap: generation %d is negative", c.Generation)
	}
	// A warm pool's VM (generation 0) serves no one until it is claimed:
	// no credentials is its rule, and a proxy's (generation 1 and on)
	// never.
	if member {
		return r, nil
	}
	if err := c.Credentials.Validate(); err != nil {
		return r, fmt.Errorf("bootstrap: %w", err)
	}
	return r, nil
}

// prefixes parses CIDRs, refusing IPv4-mapped IPv6 prefixes (they would
// slip past the IPv4 rules), and returns them masked: only the canonical
// text of a prefix ever reaches the script.
func prefixes(what string, cidrs []string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, s := range cidrs {
		p, err := netip.ParsePrefix(strings.TrimSpace(s))
		if err != nil {
			return nil, fmt.Errorf("bootstrap: %s %q is not a CIDR: %w", what, s, err)
		}
		if p.Addr().Is4In6() {
			return nil, fmt.Errorf("bootstrap: %s %q is an IPv4-mapped IPv6 prefix: give its IPv4 form", what, s)
		}
		out = append(out, p.Masked())
	}
	return out, nil
}

// outermost drops every prefix another one holds, and duplicates: an
// nftables interval set refuses overlapping elements, and an operator's
// range may well lie inside a default one.
func outermost(ps []netip.Prefix) []netip.Prefix {
	var out []netip.Prefix
	for i, p := range ps {
		held := false
		for j, q := range ps {
			if i != j && q.Bits() <= p.Bits() && q.Contains(p.Addr()) && (q.Bits() < p.Bits() || j < i) {
				held = true
				break
			}
		}
		if !held {
			out = append(out, p)
		}
	}
	return out
}

func byFamily(ps []netip.Prefix) (v4, v6 []string) {
	for _, p := range ps {
		if p.Addr().Is4() {
			v4 = append(v4, p.String())
		} else {
			v6 = append(v6, p.String())
		}
	}
	return v4, v6
}

// Render returns the startup script for c.
func Render(c Config) (string, error) {
	r, err := c.check()
	if err != nil {
		return "", err
	}
	var b bytes.Buffer
	if err := script.Execute(&b, r); err != nil {
		return "", fmt.Errorf("bootstrap: rendering the startup script: %w", err)
	}
	return b.String(), nil
}

// CloudInitScript returns the bootstrap of a cloud-init boot (package
// cloudinit puts it in the user-data) for the engine's configuration cfg:
// the startup script's installation, filter, engine and agent, with its
// settings read from the files the user-data writes (vmconfig.BootDir)
// instead of the metadata server, and the result said in the readiness
// file (vmconfig.ReadinessFile) the engine serves with its status on the
// proxy port, instead of guest attributes and a call-home. cfg is
// EngineConfig's output: its ports are read from it.
func CloudInitScript(cfg vmconfig.Config) (string, error) {
	port, err := portOf("listen", cfg.Listen)
	if err != nil {
		return "", err
	}
	stats := statsPort
	if cfg.StatsListen != "" {
		if stats, err = portOf("statsListen", cfg.StatsListen); err != nil {
			return "", err
		}
	}
	r := rendered{Port: int32(port), StatsPort: stats, DefaultProbeTarget: vmconfig.DefaultProbeTarget, TrafficInterval: vmconfig.TrafficInterval,
		EnginePath: vmconfig.EnginePath, CloudInit: true, BootDir: vmconfig.BootDir, ReadinessFile: vmconfig.ReadinessFile}
	var b bytes.Buffer
	if err := script.Execute(&b, r); err != nil {
		return "", fmt.Errorf("bootstrap: rendering the cloud-init boot's script: %w", err)
	}
	return b.String(), nil
}

// portOf reads the port of an engine's listen address.
func portOf(field, hostport string) (int, error) {
	_, p, err := net.SplitHostPort(hostport)
	if err != nil {
		return 0, fmt.Errorf("bootstrap: the engine's %s %q is not host:port: %w", field, hostport, err)
	}
	n, err := strconv.Atoi(p)
	if err != nil || n < 1 || n > 65535 {
		return 0, fmt.Errorf("bootstrap: the engine's %s %q has no port 1-65535", field, hostport)
	}
	return n, nil
}

var funcs = template.FuncMap{"q": shellQuote}

var script = template.Must(template.New("startup-script").Funcs(funcs).Parse(vmconfig.StartupScriptTemplate))

// shellQuote single-quotes a value for the shell. Every value is validated
// to a safe alphabet before it gets here; quoting is the second wall.
func shellQuote(v any) string {
	var s string
	switch x := v.(type) {
	case string:
		s = x
	case int32:
		s = strconv.Itoa(int(x))
	default:
		s = fmt.Sprint(x)
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
