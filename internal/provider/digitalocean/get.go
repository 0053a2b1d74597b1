package digitalocean

import (
	"context"
	"log/slog"
	"net/netip"
	"strconv"
	"time"

	"github.com/digitalocean/godo"

	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/provider/vmside"
	"github.com/egress-proxies/egress/internal/vm/vmconfig"
)

// A Droplet's statuses ("new", "active", "off", "archive").
const (
	statusNew     = "new"
	statusActive  = "active"
	statusOff     = "off"
	statusArchive = "archive"
)

// Get reads the Droplet, or the reserved IP or the residue (residue.go)
// another kind of ID names. A Droplet that runs the default bootstrap is
// Running only once its proxy says it serves (Prober): DigitalOcean's
// "active" is a booted Droplet, not a serving proxy. A Static proxy's
// Droplet is Running only once it holds the proxy's reserved IP, which
// Get gives it (reservedip.go), and its proxy says its outbound traffic
// leaves from that address (staticEgress).
func (p *Provider) Get(ctx context.Context, providerID string) (*provider.Instance, error) {
	id, err := parseID(providerID)
	if err != nil {
		return nil, err
	}
	switch {
	case id.address != "":
		return p.getReservedIP(ctx, providerID, id.address)
	case id.tag != "":
		return p.getResidue(ctx, providerID, id.tag)
	}
	d, _, err := p.c.Droplets.Get(ctx, id.droplet)
	if err != nil {
		return nil, p.wrap("get", providerID, err)
	}
	if d.Status == statusArchive {
		// Being destroyed: it never comes back.
		return nil, provider.NewError(provider.KindNotFound, "get", providerID, provider.ErrNotFound)
	}
	out := convert(d)
	if out.State != provider.StateRunning {
		return &out, nil
	}
	static := Labels(d.Tags)[tagStaticIP] == "true"
	if static {
		addr, err := p.holdAddress(ctx, d, out.UID)
		if err != nil {
			return nil, err
		}
		if addr == "" {
			out.State = provider.StateProvisioning
			return &out, nil
		}
		out.IP, out.AddressID = addr, reservedIPID(addr)
	}
	if out.StatusPort > 0 {
		if err := p.readiness(ctx, &out, static); err != nil {
			return nil, err
		}
	}
	return &out, nil
}

// readiness asks the VM's proxy whether it serves (vmside.Observe); a
// Static proxy's, whether it serves from its reserved IP (staticEgress).
func (p *Provider) readiness(ctx context.Context, out *provider.Instance, static bool) error {
	prober := p.cfg.Prober
	if static {
		prober = staticEgress{next: prober, reserved: out.IP, log: p.cfg.Log}
	}
	unanswered, err := vmside.Observe(ctx, prober, out, out.StatusPort, "")
	if unanswered != nil {
		p.cfg.Log.Debug("digitalocean droplet does not answer its status request yet", slog.String("providerID", out.ID), slog.Any("error", unanswered))
	}
	return err
}

// staticEgress holds a Static proxy's Droplet to its reserved IP: its
// answer "ready" counts only once its agent says the outbound traffic
// leaves from that address (vmconfig.Readiness.Egress), which it says
// once it routed it through the address's anchor gateway (package dovm,
// anchor.go). Until then the Droplet serves, but a request through it
// would reach its target from the Droplet's own address, which the
// partner who allowlisted the reserved IP refuses; so it stays
// Provisioning, with no boot error: the route comes by itself within the
// boot, and the boot timeout replaces a Droplet where it never does.
type staticEgress struct {
	next     Prober
	reserved string
	log      *slog.Logger
}

func (s staticEgress) Probe(ctx context.Context, ip string, port int32, uid, id string) (Status, error) {
	st, err := s.next.Probe(ctx, ip, port, uid, id)
	if err == nil && st.Ready && st.Egress != s.reserved {
		s.log.Debug("digitalocean droplet serves, but not from its reserved IP yet", slog.String("uid", uid),
			slog.String("reservedIP", s.reserved), slog.String("egress", st.Egress))
		st.Ready = false
	}
	return st, err
}

// probePort is the port a Droplet that runs the default bootstrap
// answers the status request on.
func probePort(labels map[string]string) (int32, bool) {
	v, ok := labels[tagProbePort]
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(v, 10, 32)
	return int32(n), err == nil && n > 0 && n < 65536
}

// convert maps a Droplet onto the provider's view.
func convert(d *godo.Droplet) provider.Instance {
	labels := Labels(d.Tags)
	out := provider.Instance{ID: dropletID(d.ID), State: state(d.Status), UID: labels[provider.LabelUID],
		Deployment: labels[provider.LabelDeployment]}
	out.CreatedAt, _ = time.Parse(time.RFC3339, d.Created)
	out.IP, _ = d.PublicIPv4()
	out.IPv6, _ = d.PublicIPv6()
	out.IPv6Prefix = dropletRange(out.IPv6)
	if d.Region != nil {
		out.Zone = d.Region.Slug
	}
	own, hasOwn := ownTagOf(d.Tags)
	if out.UID == "" && hasOwn && own.Deployment == out.Deployment {
		// Its uid tag deleted while it still ran (Delete of a duplicate
		// of it, a person): its own tag still says whose it is.
		out.UID = own.UID
	}
	if port, ok := probePort(labels); ok {
		out.StatusPort = port
		out.StatusID = labels[vmside.LabelStatusID] // a Droplet made before its own tag
		if hasOwn {
			out.StatusID = own.ID
		}
	}
	return out
}

// state maps a Droplet's status onto the provider's four states: "off" is
// a powered-off Droplet (it can be powered on again), one being destroyed
// is Terminated (Get answers it as gone).
func state(s string) provider.InstanceState {
	switch s {
	case statusActive:
		return provider.StateRunning
	case statusOff:
		return provider.StateStopped
	case statusArchive:
		return provider.StateTerminated
	default: // new, and any status DigitalOcean adds
		return provider.StateProvisioning
	}
}

// dropletRange is the /124 a Droplet's public IPv6 address lies in: a
// Droplet made with ipv6 true is given 16 addresses (DigitalOcean's IPv6
// limits), its networks.v6 entry names the first, and its netmask (64)
// is the link's, not what is routed to the Droplet. "" for no address.
func dropletRange(addr string) string {
	a, err := netip.ParseAddr(addr)
	if err != nil || !a.Is6() || a.Is4In6() {
		return ""
	}
	p, _ := a.Prefix(DropletIPv6Bits)
	return p.String()
}

// DropletIPv6Bits is the length of the range of IPv6 addresses a Droplet
// is given: 16 addresses.
const DropletIPv6Bits = 124

// StopTraffic hands the VM its namespace's stop, or its end, through its
// status door (provider.TrafficStopper, vmside.StopTraffic).
func (p *Provider) StopTraffic(ctx context.Context, providerID string, stop *vmconfig.TrafficStop) error {
	return vmside.StopTraffic(ctx, p.cfg.Prober, p.Get, providerID, stop)
}
