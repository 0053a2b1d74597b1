package dovm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"time"

	"github.com/egress-proxies/egress/internal/vm/agent"
)

// A DigitalOcean Droplet's reserved IP is where the proxy is reached, but
// what the Droplet sends leaves by its own public address unless the
// Droplet routes it through the reserved IP's anchor: an address of its
// public interface (anchor_ipv4, 10.x/16) whose gateway is DigitalOcean's,
// which sends what comes from the anchor address out from the reserved IP
// assigned to the Droplet. DigitalOcean documents the switch as one
// route: the default route via the anchor gateway, with the anchor
// address as source. cloud-init's DigitalOcean datasource puts the
// anchor address on eth0 (from the same metadata, without its gateway,
// so nothing uses it); Anchor adds the route, and the address too where
// cloud-init did not (a Droplet whose network cloud-init does not write).
//
// Why a boot setting (vmconfig.KeyFollow, which names this part,
// Follower) and not the metadata alone: the metadata cannot tell a
// Static proxy's Droplet whose reserved IP is not assigned yet (the
// provider assigns it once the Droplet is active, after its boot began)
// from an Ephemeral proxy's, which never gets one. Polling on every
// Droplet for an address that may never come would leave the readiness
// of a Static one undecided. So the cloud-init renderer writes the
// setting (the plugin's Boot.Follow) for a Static proxy's Droplet alone: an
// Ephemeral Droplet never reads the metadata for it and never changes a
// route, and a Static one waits for its reserved IP and says, in its
// readiness (vmconfig.Readiness.Egress), when its traffic leaves from it.

// AnchorMetadata is what DigitalOcean's metadata document says of the
// Droplet's reserved IP and of its public interface's anchor.
type AnchorMetadata struct {
	// Active says a reserved IP is assigned to the Droplet; ReservedIP
	// is it.
	Active     bool
	ReservedIP netip.Addr
	// Anchor is the public interface's anchor address with its prefix
	// length, AnchorGateway the gateway that sends its traffic out from
	// the reserved IP: every Droplet has them, with or without one.
	Anchor        netip.Prefix
	AnchorGateway netip.Addr
	// PublicGateway is the public interface's own gateway: the default
	// route goes back to it when the reserved IP is unassigned.
	PublicGateway netip.Addr
}

// doDocument is the part of /metadata/v1.json Anchor reads, as
// DigitalOcean's metadata reference and cloud-init's DigitalOcean helper
// (helpers/digitalocean.py) show it: reserved_ip.ipv4 {active,
// ip_address} (ip_address only while active), and each public interface's
// ipv4 and anchor_ipv4 {ip_address, netmask, gateway}. The per-item paths
// (reserved_ip/ipv4/active, interfaces/public/0/anchor_ipv4/address, …)
// serve the same values one request each; the document answers them all
// at once, so one poll never mixes two states.
type doDocument struct {
	ReservedIP struct {
		IPv4 struct {
			Active    bool   `json:"active"`
			IPAddress string `json:"ip_address"`
		} `json:"ipv4"`
	} `json:"reserved_ip"`
	Interfaces struct {
		Public []struct {
			IPv4       doIPv4  `json:"ipv4"`
			AnchorIPv4 *doIPv4 `json:"anchor_ipv4"`
		} `json:"public"`
	} `json:"interfaces"`
}

type doIPv4 struct {
	IPAddress string `json:"ip_address"`
	Netmask   string `json:"netmask"`
	Gateway   string `json:"gateway"`
}

// ParseAnchorMetadata reads DigitalOcean's metadata document. Every
// Droplet has an anchor, assigned a reserved IP or not; an active
// reserved IP without an address, or without an anchor on the first
// public interface, is an error: the Droplet could not route through it.
func ParseAnchorMetadata(body []byte) (AnchorMetadata, error) {
	var doc doDocument
	if err := json.Unmarshal(body, &doc); err != nil {
		return AnchorMetadata{}, fmt.Errorf("dovm: DigitalOcean's metadata document: %w", err)
	}
	var m AnchorMetadata
	if len(doc.Interfaces.Public) > 0 {
		pub := doc.Interfaces.Public[0]
		if gw, err := netip.ParseAddr(pub.IPv4.Gateway); err == nil && gw.Is4() {
			m.PublicGateway = gw
		}
		if pub.AnchorIPv4 != nil {
			var err error
			if m.Anchor, m.AnchorGateway, err = parseAnchor(*pub.AnchorIPv4); err != nil {
				return AnchorMetadata{}, err
			}
		}
	}
	if !doc.ReservedIP.IPv4.Active {
		return m, nil
	}
	m.Active = true
	ip, err := netip.ParseAddr(doc.ReservedIP.IPv4.IPAddress)
	if err != nil || !ip.Is4() {
		return AnchorMetadata{}, fmt.Errorf("dovm: DigitalOcean's metadata: reserved_ip.ipv4.ip_address %q is not an IPv4 address", doc.ReservedIP.IPv4.IPAddress)
	}
	m.ReservedIP = ip
	if !m.Anchor.IsValid() {
		return AnchorMetadata{}, errors.New("dovm: DigitalOcean's metadata: a reserved IP is active but interfaces.public[0] has no anchor_ipv4")
	}
	return m, nil
}

// parseAnchor reads an anchor_ipv4: its address with the prefix its
// netmask gives, and its gateway.
func parseAnchor(a doIPv4) (netip.Prefix, netip.Addr, error) {
	addr, err1 := netip.ParseAddr(a.IPAddress)
	mask, err2 := netip.ParseAddr(a.Netmask)
	gw, err3 := netip.ParseAddr(a.Gateway)
	if err := errors.Join(err1, err2, err3); err != nil || !addr.Is4() || !mask.Is4() || !gw.Is4() {
		return netip.Prefix{}, netip.Addr{}, fmt.Errorf("dovm: DigitalOcean's metadata: anchor_ipv4 %+v is not an IPv4 address, netmask and gateway", a)
	}
	mb := mask.As4()
	ones, bits := net.IPMask(mb[:]).Size()
	if bits == 0 {
		return netip.Prefix{}, netip.Addr{}, fmt.Errorf("dovm: DigitalOcean's metadata: anchor_ipv4's netmask %s is not a prefix", a.Netmask)
	}
	return netip.PrefixFrom(addr, ones), gw, nil
}

// Route is the main table's IPv4 default route, as `ip -j route` shows
// it.
type Route struct {
	Gateway netip.Addr
	Dev     string
	// Src is its preferred source (prefsrc), invalid when it names none.
	Src    netip.Addr
	Metric int
}

// AnchorPlan is what Anchor does for one reading: the ip(8) commands,
// in order, and the address the VM's traffic leaves from once they ran
// (invalid: its own).
type AnchorPlan struct {
	Commands [][]string
	Egress   netip.Addr
}

// PlanAnchor decides, from the metadata and the VM's default route and
// the addresses of that route's device, what makes the VM's outbound
// IPv4 leave as the metadata says: through the anchor gateway, from the
// anchor address, while the reserved IP is active; by the public gateway
// otherwise. It changes nothing that is already so, and with no reserved
// IP and a route not through the anchor it changes nothing at all.
func PlanAnchor(m AnchorMetadata, cur Route, addrs []netip.Prefix) AnchorPlan {
	dev := cur.Dev
	if dev == "" {
		// No default route at all: a Droplet's public interface.
		dev = "eth0"
	}
	replace := func(via netip.Addr, src netip.Addr) []string {
		cmd := []string{"route", "replace", "default", "via", via.String(), "dev", dev}
		if src.IsValid() {
			cmd = append(cmd, "src", src.String())
		}
		if cur.Metric != 0 {
			// The same metric, so the replace replaces that route rather
			// than add a second default beside it.
			cmd = append(cmd, "metric", strconv.Itoa(cur.Metric))
		}
		return cmd
	}
	if !m.Active {
		var p AnchorPlan
		if m.AnchorGateway.IsValid() && cur.Gateway == m.AnchorGateway && m.PublicGateway.IsValid() {
			// Routed through an anchor whose reserved IP is gone: out by
			// the Droplet's own address again.
			p.Commands = append(p.Commands, replace(m.PublicGateway, netip.Addr{}))
		}
		return p
	}
	p := AnchorPlan{Egress: m.ReservedIP}
	has := false
	for _, a := range addrs {
		has = has || a == m.Anchor
	}
	if !has {
		p.Commands = append(p.Commands, []string{"addr", "add", m.Anchor.String(), "dev", dev})
	}
	if cur.Gateway != m.AnchorGateway || cur.Src != m.Anchor.Addr() || cur.Dev != dev {
		p.Commands = append(p.Commands, replace(m.AnchorGateway, m.Anchor.Addr()))
	}
	return p
}

// Anchor keeps a Droplet's outbound IPv4 leaving from its reserved IP
// (see the comment above AnchorMetadata).
type Anchor struct {
	// URL is DigitalOcean's metadata document (the URL of the setting
	// vmconfig.KeyFollow).
	URL    string
	Client *http.Client
	// IP runs ip(8).
	IP agent.IPFunc
	// Report says the address the VM's traffic leaves from, "" for its
	// own (agent.FollowEnv.Report): called when it changes.
	Report func(ctx context.Context, egress string) error
	// Poll is how often the metadata is read while the reserved IP is
	// not assigned yet, for at most Wait; Recheck how often once it is:
	// what took the route away (a network restart) is put back, and an
	// unassigned reserved IP sends the traffic out by the Droplet's own
	// address again. Zero is DefaultAnchorPoll, DefaultAnchorWait and
	// DefaultAnchorRecheck.
	Poll, Wait, Recheck time.Duration
	// Sleep waits d or until ctx ends; nil is a timer's. Tests count the
	// waits instead.
	Sleep func(ctx context.Context, d time.Duration) error
	Log   *slog.Logger
}

// The anchor's pace: the provider assigns the reserved IP at its first
// read of the active Droplet (it polls every 10 s) and boots are done in
// minutes, so 5 s polls for 15 minutes cover a boot with room to spare,
// and cost one local request each; after that, once a minute is enough
// to undo a network restart.
const (
	DefaultAnchorPoll    = 5 * time.Second
	DefaultAnchorWait    = 15 * time.Minute
	DefaultAnchorRecheck = time.Minute
)

// ErrNoReservedIP is Run's answer when no reserved IP was assigned
// within Wait: the VM keeps leaving by its own address, says no other,
// and the control plane's boot timeout replaces it.
var ErrNoReservedIP = errors.New("dovm: no reserved IP was assigned to the Droplet")

// Run follows the metadata until ctx ends: see Anchor. A step that fails
// (the metadata does not answer, ip refuses) is tried again at the next
// poll; it is logged.
func (a *Anchor) Run(ctx context.Context) error {
	poll, wait, recheck := or(a.Poll, DefaultAnchorPoll), or(a.Wait, DefaultAnchorWait), or(a.Recheck, DefaultAnchorRecheck)
	sleep := a.Sleep
	if sleep == nil {
		sleep = sleepCtx
	}
	reported, assigned := "", false
	waited := time.Duration(0)
	for {
		egress, err := a.Step(ctx)
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case err != nil:
			a.Log.Warn("the reserved IP's route not checked", slog.Any("error", err))
		case egress != reported:
			if rerr := a.Report(ctx, egress); rerr != nil {
				a.Log.Warn("the egress address not said in the readiness file", slog.Any("error", rerr))
			} else {
				a.Log.Info("outbound traffic leaves from the reserved IP", slog.String("egress", egress))
				reported = egress
			}
		}
		assigned = assigned || egress != ""
		d := recheck
		if !assigned {
			if waited >= wait {
				return fmt.Errorf("%w within %s", ErrNoReservedIP, wait)
			}
			d, waited = poll, waited+poll
		}
		if err := sleep(ctx, d); err != nil {
			return err
		}
	}
}

// Step reads the metadata and the route once and makes them agree
// (PlanAnchor). It returns the address the VM's traffic now leaves from,
// "" for its own.
func (a *Anchor) Step(ctx context.Context) (string, error) {
	m, err := a.read(ctx)
	if err != nil {
		return "", err
	}
	cur, addrs, err := a.routes(ctx)
	if err != nil {
		return "", err
	}
	p := PlanAnchor(m, cur, addrs)
	for _, c := range p.Commands {
		if _, err := a.IP(ctx, c...); err != nil {
			return "", fmt.Errorf("dovm: ip %v: %w", c, err)
		}
		a.Log.Info("route changed for the reserved IP", slog.Any("ip", c))
	}
	if !p.Egress.IsValid() {
		return "", nil
	}
	return p.Egress.String(), nil
}

func (a *Anchor) read(ctx context.Context) (AnchorMetadata, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.URL, nil)
	if err != nil {
		return AnchorMetadata{}, err
	}
	c := a.Client
	if c == nil {
		c = http.DefaultClient
	}
	resp, err := c.Do(req)
	if err != nil {
		return AnchorMetadata{}, fmt.Errorf("dovm: DigitalOcean's metadata: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return AnchorMetadata{}, fmt.Errorf("dovm: DigitalOcean's metadata: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return AnchorMetadata{}, fmt.Errorf("dovm: DigitalOcean's metadata: GET %s: %s", a.URL, resp.Status)
	}
	return ParseAnchorMetadata(body)
}

// routes reads the default route and its device's IPv4 addresses.
func (a *Anchor) routes(ctx context.Context) (Route, []netip.Prefix, error) {
	out, err := a.IP(ctx, "-j", "-4", "route", "show", "default")
	if err != nil {
		return Route{}, nil, fmt.Errorf("dovm: the default route: %w", err)
	}
	cur, err := ParseDefaultRoute(out)
	if err != nil {
		return Route{}, nil, err
	}
	dev := cur.Dev
	if dev == "" {
		dev = "eth0"
	}
	out, err = a.IP(ctx, "-j", "-4", "addr", "show", "dev", dev)
	if err != nil {
		return Route{}, nil, fmt.Errorf("dovm: the addresses of %s: %w", dev, err)
	}
	addrs, err := ParseAddrs(out)
	return cur, addrs, err
}

// ParseDefaultRoute reads `ip -j -4 route show default`: the route of
// the lowest metric, the one the kernel uses; a zero Route when there is
// none.
func ParseDefaultRoute(out []byte) (Route, error) {
	var routes []struct {
		Gateway string `json:"gateway"`
		Dev     string `json:"dev"`
		Prefsrc string `json:"prefsrc"`
		Metric  int    `json:"metric"`
	}
	if err := json.Unmarshal(out, &routes); err != nil {
		return Route{}, fmt.Errorf("dovm: ip route's answer: %w", err)
	}
	var best Route
	found := false
	for _, r := range routes {
		gw, err := netip.ParseAddr(r.Gateway)
		if err != nil {
			continue // a default route with no gateway (a point-to-point link)
		}
		src, _ := netip.ParseAddr(r.Prefsrc)
		if !found || r.Metric < best.Metric {
			best, found = Route{Gateway: gw, Dev: r.Dev, Src: src, Metric: r.Metric}, true
		}
	}
	return best, nil
}

// ParseAddrs reads the IPv4 addresses of `ip -j -4 addr show dev DEV`.
func ParseAddrs(out []byte) ([]netip.Prefix, error) {
	var links []struct {
		AddrInfo []struct {
			Family    string `json:"family"`
			Local     string `json:"local"`
			Prefixlen int    `json:"prefixlen"`
		} `json:"addr_info"`
	}
	if err := json.Unmarshal(out, &links); err != nil {
		return nil, fmt.Errorf("dovm: ip addr's answer: %w", err)
	}
	var out4 []netip.Prefix
	for _, l := range links {
		for _, ai := range l.AddrInfo {
			a, err := netip.ParseAddr(ai.Local)
			if ai.Family != "inet" || err != nil {
				continue
			}
			if p, err := a.Prefix(ai.Prefixlen); err == nil {
				out4 = append(out4, netip.PrefixFrom(a, p.Bits()))
			}
		}
	}
	return out4, nil
}

func or(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
