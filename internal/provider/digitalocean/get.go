package digitalocean

import (
	"context"
	"log/slog"
	"strconv"
	"time"

	"github.com/digitalocean/godo"

	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/provider/vmside"
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
// Get gives it (reservedip.go).
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
	if Labels(d.Tags)[tagStaticIP] == "true" {
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
		if err := p.readiness(ctx, &out); err != nil {
			return nil, err
		}
	}
	return &out, nil
}

// readiness asks the VM's proxy whether it serves (vmside.Observe).
func (p *Provider) readiness(ctx context.Context, out *provider.Instance) error {
	unanswered, err := vmside.Observe(ctx, p.cfg.Prober, out, out.StatusPort, "")
	if unanswered != nil {
		p.cfg.Log.Debug("digitalocean droplet does not answer its status request yet", slog.String("providerID", out.ID), slog.Any("error", unanswered))
	}
	return err
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
