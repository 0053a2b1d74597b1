package hetzner

import (
	"context"
	"log/slog"
	"strconv"

	"github.com/hetznercloud/hcloud-go/v2/hcloud"

	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/provider/vmside"
	"github.com/egress-proxies/egress/internal/vm/vmconfig"
)

// Get reads the server, or the Primary IP a Primary IP's ID names. A
// server that runs the default bootstrap is Running only once its proxy
// says it serves (Prober): Hetzner's "running" is a booted server, not a
// serving proxy.
func (p *Provider) Get(ctx context.Context, providerID string) (*provider.Instance, error) {
	id, err := parseID(providerID)
	if err != nil {
		return nil, err
	}
	if id.primaryIP {
		return p.getPrimaryIP(ctx, providerID, id.id)
	}
	sv, _, err := p.c.Server.GetByID(ctx, id.id)
	if err != nil {
		return nil, p.wrap("get", providerID, err)
	}
	if sv == nil || sv.Status == hcloud.ServerStatusDeleting {
		// Gone, or going: a server being deleted never comes back.
		return nil, provider.NewError(provider.KindNotFound, "get", providerID, provider.ErrNotFound)
	}
	out := convert(sv)
	if out.State == provider.StateRunning {
		if port, ok := probePort(sv); ok {
			if err := p.readiness(ctx, &out, port); err != nil {
				return nil, err
			}
		}
	}
	return &out, nil
}

// probePort is the port a server that runs the default bootstrap answers
// the status request on.
func probePort(sv *hcloud.Server) (int32, bool) {
	v, ok := sv.Labels[labelProbePort]
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(v, 10, 32)
	return int32(n), err == nil && n > 0 && n < 65536
}

// readiness asks the VM's proxy whether it serves (vmside.Observe).
func (p *Provider) readiness(ctx context.Context, out *provider.Instance, port int32) error {
	unanswered, err := vmside.Observe(ctx, p.cfg.Prober, out, port, "")
	if unanswered != nil {
		p.cfg.Log.Debug("hetzner server does not answer its status request yet", slog.String("providerID", out.ID), slog.Any("error", unanswered))
	}
	return err
}

// convert maps a server onto the provider's view.
func convert(sv *hcloud.Server) provider.Instance {
	out := provider.Instance{ID: serverID(sv.ID), State: state(sv.Status), UID: sv.Labels[provider.LabelUID],
		Deployment: sv.Labels[provider.LabelDeployment], CreatedAt: sv.Created}
	if ip := sv.PublicNet.IPv4.IP; ip != nil && !sv.PublicNet.IPv4.IsUnspecified() {
		out.IP = ip.String()
	}
	// Every server's public_net.ipv6.ip is a /64 routed to it (Create
	// enables IPv6 always: it costs nothing), which the engine picks
	// sources from; its ::1, which Hetzner's images configure, is the
	// server's own.
	if n := sv.PublicNet.IPv6.Network; n != nil && !sv.PublicNet.IPv6.IsUnspecified() {
		out.IPv6Prefix = n.String()
	}
	if sv.Location != nil {
		out.Zone = sv.Location.Name
	}
	if sv.Labels[labelStaticIP] == "true" && sv.PublicNet.IPv4.ID != 0 {
		out.AddressID = primaryIPID(sv.PublicNet.IPv4.ID)
	}
	if port, ok := probePort(sv); ok {
		out.StatusPort = port
		out.StatusID = sv.Labels[vmside.LabelStatusID]
	}
	return out
}

// state maps a server's status onto the provider's four states. "off" is
// a stopped server (it can be powered on again); one being deleted is
// Terminated (Get answers it as gone).
func state(s hcloud.ServerStatus) provider.InstanceState {
	switch s {
	case hcloud.ServerStatusRunning:
		return provider.StateRunning
	case hcloud.ServerStatusOff, hcloud.ServerStatusStopping:
		return provider.StateStopped
	case hcloud.ServerStatusDeleting:
		return provider.StateTerminated
	default: // initializing, starting, migrating, rebuilding, unknown and any new one
		return provider.StateProvisioning
	}
}

// getPrimaryIP reads a Primary IP as an instance of its own kind: in use
// (Running) or not (Terminated), with its uid and address.
func (p *Provider) getPrimaryIP(ctx context.Context, providerID string, id int64) (*provider.Instance, error) {
	ip, _, err := p.c.PrimaryIP.GetByID(ctx, id)
	if err != nil {
		return nil, p.wrap("get", providerID, err)
	}
	if ip == nil {
		return nil, provider.NewError(provider.KindNotFound, "get", providerID, provider.ErrNotFound)
	}
	out := convertPrimaryIP(ip)
	return &out, nil
}

func convertPrimaryIP(ip *hcloud.PrimaryIP) provider.Instance {
	out := provider.Instance{ID: primaryIPID(ip.ID), State: provider.StateTerminated, UID: ip.Labels[provider.LabelUID],
		Deployment: ip.Labels[provider.LabelDeployment], CreatedAt: ip.Created, IP: ip.IP.String()}
	if ip.AssigneeID != 0 {
		out.State = provider.StateRunning
	}
	if ip.Location != nil {
		out.Zone = ip.Location.Name
	}
	return out
}

// StopTraffic hands the VM its namespace's stop, or its end, through its
// status door (provider.TrafficStopper, vmside.StopTraffic).
func (p *Provider) StopTraffic(ctx context.Context, providerID string, stop *vmconfig.TrafficStop) error {
	return vmside.StopTraffic(ctx, p.cfg.Prober, p.Get, providerID, stop)
}
