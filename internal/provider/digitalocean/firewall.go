package digitalocean

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/digitalocean/godo"
)

// Firewall is what the deployment's cloud firewall opens: the same the
// hetzner-firewall module opens on Hetzner (deploy/terraform), from the
// same settings. DigitalOcean's cloud firewalls refuse whatever no rule
// admits, inbound and outbound, and are applied to every Droplet of a tag
// as it is tagged: one firewall per deployment, applied by the
// deployment's tag, which every Droplet has from its create call, so no
// Droplet boots outside it.
type Firewall struct {
	// ProxyPorts are the TCP ports ("3128") or ranges ("3128-3130") the
	// proxies listen on (PROXY_PORTS).
	ProxyPorts []string
	// SourceRanges are the CIDRs that may reach them
	// (FIREWALL_SOURCE_RANGES); each Droplet narrows that further on the
	// host (allowedSourceRanges).
	SourceRanges []string
	// StatusSourceRanges are the functions' fixed egress addresses
	// (VM_STATUS_SOURCE_RANGES), from which the control plane asks each
	// Droplet its status on its proxy port, and to which the Droplet's
	// engine answers the status and nothing else.
	StatusSourceRanges []string
}

// FirewallName is the name of deployment's firewall.
func FirewallName(deployment string) string { return "egress-proxy-allow-" + deployment }

// Check says what is wrong with the firewall's settings: a port that is
// none, a range that is no CIDR, nothing to open.
func (f Firewall) Check() error {
	if len(f.ProxyPorts) == 0 {
		return errors.New("opens no proxy port")
	}
	for _, p := range f.ProxyPorts {
		lo, hi, isRange := strings.Cut(p, "-")
		if !validPort(lo) || isRange && (!validPort(hi) || atoi(hi) < atoi(lo)) {
			return fmt.Errorf("port %q is not a TCP port or range such as 3128 or 3128-3130", p)
		}
	}
	if len(f.SourceRanges) == 0 {
		return errors.New("admits no source range")
	}
	if len(f.StatusSourceRanges) == 0 {
		return errors.New("admits no status source range (the functions' fixed egress): the control plane could not ask a Droplet whether it serves")
	}
	for _, r := range slices.Concat(f.SourceRanges, f.StatusSourceRanges) {
		if _, err := netip.ParsePrefix(r); err != nil {
			return fmt.Errorf("range %q is not a CIDR", r)
		}
	}
	return nil
}

func atoi(s string) int { n, _ := strconv.Atoi(s); return n }

func validPort(s string) bool {
	n, err := strconv.Atoi(s)
	return err == nil && n > 0 && n < 65536 && strconv.Itoa(n) == s
}

// everywhere is every address, as an outbound rule's destination.
var everywhere = []string{"0.0.0.0/0", "::/0"}

// Request is the firewall deployment's Droplets are behind: each proxy
// port admits the allowed ranges and the status ranges; outbound, every
// protocol and port to everywhere, since a proxy's work is to reach the
// Internet (a DigitalOcean firewall with no outbound rule refuses every
// outbound packet). "0" is every port, and ICMP's ports are "0" too: the
// API description requires ports on every rule.
func (f Firewall) Request(deployment string) *godo.FirewallRequest {
	sources := slices.Concat(f.SourceRanges, f.StatusSourceRanges)
	slices.Sort(sources)
	sources = slices.Compact(sources)
	req := &godo.FirewallRequest{Name: FirewallName(deployment), Tags: []string{DeploymentTag(deployment)}, DropletIDs: []int{}}
	for _, port := range f.ProxyPorts {
		req.InboundRules = append(req.InboundRules, godo.InboundRule{Protocol: "tcp", PortRange: port, Sources: &godo.Sources{Addresses: sources}})
	}
	// SOCKS5's UDP relay listens on its proxy port's number
	// (spec.socks5UDP), for the allowed ranges only; where no proxy turned
	// it on, the VM's own filter drops the datagrams.
	if udpSources := slices.Compact(slices.Sorted(slices.Values(f.SourceRanges))); len(udpSources) > 0 {
		for _, port := range f.ProxyPorts {
			req.InboundRules = append(req.InboundRules, godo.InboundRule{Protocol: "udp", PortRange: port, Sources: &godo.Sources{Addresses: udpSources}})
		}
	}
	req.OutboundRules = []godo.OutboundRule{
		{Protocol: "tcp", PortRange: "0", Destinations: &godo.Destinations{Addresses: everywhere}},
		{Protocol: "udp", PortRange: "0", Destinations: &godo.Destinations{Addresses: everywhere}},
		{Protocol: "icmp", PortRange: "0", Destinations: &godo.Destinations{Addresses: everywhere}},
	}
	return req
}

// ensureFirewall makes the deployment's firewall, or puts its rules and
// tag back when they differ from Config's, once per provider: before its
// first create, so no Droplet is made before the firewall it is tagged
// for exists. A failure is the create's, and the next create tries again.
func (p *Provider) ensureFirewall(ctx context.Context) error {
	p.firewallMu.Lock()
	defer p.firewallMu.Unlock()
	if p.firewallOK {
		return nil
	}
	want := p.cfg.Firewall.Request(p.cfg.Deployment)
	// The tag the firewall is applied by must exist before the firewall
	// names it; making a tag that exists is a no-op.
	if _, _, err := p.c.Tags.Create(ctx, &godo.TagCreateRequest{Name: DeploymentTag(p.cfg.Deployment)}); err != nil {
		return p.wrap("firewall", want.Name, err)
	}
	fws, err := listAll(ctx, func(opt *godo.ListOptions) ([]godo.Firewall, *godo.Response, error) {
		return p.c.Firewalls.List(ctx, opt)
	})
	if err != nil {
		return p.wrap("firewall", want.Name, err)
	}
	var found *godo.Firewall
	for i := range fws {
		if fws[i].Name == want.Name {
			found = &fws[i]
		}
	}
	switch {
	case found == nil:
		fw, _, err := p.c.Firewalls.Create(ctx, want)
		if err != nil {
			return p.wrap("firewall", want.Name, err)
		}
		p.cfg.Log.Info("digitalocean firewall made", slog.String("firewall", fw.ID), slog.String("name", want.Name))
	case !sameFirewall(found, want):
		if _, _, err := p.c.Firewalls.Update(ctx, found.ID, want); err != nil {
			return p.wrap("firewall", found.ID, err)
		}
		p.cfg.Log.Info("digitalocean firewall's rules put back", slog.String("firewall", found.ID), slog.String("name", want.Name))
	}
	p.firewallOK = true
	return nil
}

// sameFirewall reports whether fw opens what want does, to the tags it
// names.
func sameFirewall(fw *godo.Firewall, want *godo.FirewallRequest) bool {
	return slices.Equal(ruleKeys(fw.InboundRules, nil), ruleKeys(want.InboundRules, nil)) &&
		slices.Equal(ruleKeys(nil, fw.OutboundRules), ruleKeys(nil, want.OutboundRules)) &&
		slices.Equal(sortedCopy(fw.Tags), sortedCopy(want.Tags)) && len(fw.DropletIDs) == 0
}

// ruleKeys are rules as comparable strings: protocol, ports (any for
// ICMP, which has none) and sorted addresses.
func ruleKeys(in []godo.InboundRule, out []godo.OutboundRule) []string {
	var keys []string
	key := func(proto, ports string, addrs []string) string {
		if proto == "icmp" || ports == "all" {
			ports = "0"
		}
		return proto + "/" + ports + "/" + strings.Join(sortedCopy(addrs), ",")
	}
	for _, r := range in {
		var addrs []string
		if r.Sources != nil {
			addrs = r.Sources.Addresses
		}
		keys = append(keys, key(r.Protocol, r.PortRange, addrs))
	}
	for _, r := range out {
		var addrs []string
		if r.Destinations != nil {
			addrs = r.Destinations.Addresses
		}
		keys = append(keys, key(r.Protocol, r.PortRange, addrs))
	}
	slices.Sort(keys)
	return keys
}

func sortedCopy(s []string) []string { c := slices.Clone(s); slices.Sort(c); return c }

// nextPage is the page after the one a list answered.
func nextPage(resp *godo.Response, current int) int {
	if resp != nil && resp.Links != nil {
		if n, err := resp.Links.CurrentPage(); err == nil {
			return n + 1
		}
	}
	return max(current, 1) + 1
}
