package hetzner

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"

	"github.com/hetznercloud/hcloud-go/v2/hcloud"

	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/provider/vmside"
	"github.com/egress-proxies/egress/internal/vmstatus"
)

// Create makes the server and returns without waiting for it. Hetzner
// has no request id, but a server's name is unique in the project: a
// create of a name that exists is answered uniqueness_error, and the
// server of that name is then adopted when its uid label is the
// request's, and refused otherwise, so a retry after a lost answer or a
// crash never makes a second server. A placement without a location gets
// one of its network zone's allowed ones, chosen from the uid and past
// req.AvoidZones; a Static request reserves the proxy's Primary IP first
// (a retry finds it reserved) and places the server where the IP is.
func (p *Provider) Create(ctx context.Context, req provider.CreateRequest) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", provider.NewError(provider.KindTransient, "create", req.Name, err)
	}
	loc, err := p.chooseLocation(req)
	if err != nil {
		return "", err
	}
	userData, err := p.userData(req)
	if err != nil {
		return "", err
	}
	labels := p.labels(req)
	if req.StartupScript != "" && req.CloudInit == "" {
		labels[labelProbePort] = strconv.Itoa(int(req.Port))
		// The id its status credential and sign key are derived from,
		// the same the Renderer put in its user-data.
		labels[vmside.LabelStatusID] = vmstatus.StatusID(req)
	}
	net := &hcloud.ServerCreatePublicNet{EnableIPv4: true, EnableIPv6: true}
	pinned := false
	if req.StaticIP {
		ip, err := p.ensurePrimaryIP(ctx, req, loc)
		if errors.Is(err, errAssigned) {
			// On a server already: this proxy's of this name, made by a
			// try whose answer was lost (adopted), or an older one on its
			// way out (the next try finds the IP free).
			return p.adopt(ctx, req)
		}
		if err != nil {
			return "", err
		}
		// A Primary IP lives in one location: the server goes there, and
		// capacity elsewhere is no way out for it.
		if ip.Location != nil {
			loc = ip.Location.Name
		}
		pinned = true
		if slices.Contains(req.AvoidZones, loc) {
			return "", provider.NewError(provider.KindCapacity, "create", req.Name,
				fmt.Errorf("location %s, where the proxy's Primary IP %s is, was out of capacity; a Static proxy waits for it", loc, ip.IP))
		}
		net.IPv4 = ip
		labels[labelStaticIP] = "true"
	}
	res, _, err := p.c.Server.Create(ctx, hcloud.ServerCreateOpts{
		Name:       req.Name,
		ServerType: &hcloud.ServerType{Name: cmp.Or(req.Placement.MachineType, DefaultServerType)},
		Image:      &hcloud.Image{Name: cmp.Or(req.Placement.Image, DefaultImage)},
		Location:   &hcloud.Location{Name: loc},
		UserData:   userData,
		Labels:     labels,
		PublicNet:  net,
	})
	switch kind := classify(err); {
	case err == nil:
		return serverID(res.Server.ID), nil
	case kind == provider.KindCapacity:
		e := provider.NewError(provider.KindCapacity, "create", req.Name, err)
		if !pinned && req.Placement.Zone == "" {
			e.Zone = loc
		}
		p.cfg.Log.Info("hetzner location out of capacity", slog.String("location", loc), slog.String("server", req.Name), slog.Any("error", err))
		return "", e
	case kind != provider.KindAlreadyExists:
		return "", p.wrap("create", req.Name, err)
	}
	return p.adopt(ctx, req)
}

// adopt finds the server a create's name collided with, and takes it
// when its uid label is the request's.
func (p *Provider) adopt(ctx context.Context, req provider.CreateRequest) (string, error) {
	sv, _, err := p.c.Server.GetByName(ctx, req.Name)
	switch {
	case err != nil:
		return "", p.wrap("create", req.Name, err)
	case sv == nil:
		// Deleted between the create and this read, or (a Static proxy's)
		// the server that holds the Primary IP is an older one on its way
		// out: the next try makes it.
		return "", provider.NewError(provider.KindTransient, "create", req.Name, errors.New("no server of that name: the one that holds its name or its Primary IP is on its way out"))
	case sv.Labels[provider.LabelUID] != req.UID:
		return "", provider.NewError(provider.KindAlreadyExists, "create", req.Name,
			fmt.Errorf("server %d exists with uid label %q, not %q: it belongs to something else", sv.ID, sv.Labels[provider.LabelUID], req.UID))
	case sv.Status == hcloud.ServerStatusDeleting:
		// The proxy's previous server, which Get already calls gone, still
		// holds the name (a replacement's is its predecessor's): the next
		// try, once Hetzner finished deleting it, makes the new one.
		return "", provider.NewError(provider.KindTransient, "create", req.Name,
			fmt.Errorf("server %d of that name is still being deleted", sv.ID))
	}
	p.cfg.Log.Debug("hetzner server of that name adopted", slog.String("server", req.Name), slog.String("providerID", serverID(sv.ID)))
	return serverID(sv.ID), nil
}

// chooseLocation is the placement's location, or one of its network
// zone's allowed locations chosen from the uid, past those to avoid.
func (p *Provider) chooseLocation(req provider.CreateRequest) (string, error) {
	pl := req.Placement
	if pl.Zone != "" {
		if networkZoneOf[pl.Zone] == "" {
			return "", provider.NewError(provider.KindPermanent, "create", req.Name, fmt.Errorf("%q is not a Hetzner location (%s)", pl.Zone, locationList()))
		}
		return pl.Zone, nil
	}
	locs := networkZones.Allowed(pl.Region, p.cfg.Locations)
	if len(locs) == 0 {
		return "", provider.NewError(provider.KindPermanent, "create", req.Name,
			fmt.Errorf("network zone %q has no allowed location (network zones: %s)", pl.Region, zoneList()))
	}
	loc, ok := provider.ChooseZone(req.UID, locs, req.AvoidZones)
	if !ok {
		return "", provider.NewError(provider.KindCapacity, "create", req.Name,
			fmt.Errorf("every location of %s was out of capacity for this proxy: %s", pl.Region, strings.Join(req.AvoidZones, ", ")))
	}
	return loc, nil
}

// userData is what the server boots with: a spec's own cloud-init as it
// is, or the default bootstrap as the Renderer makes it; within Hetzner's
// limit either way.
func (p *Provider) userData(req provider.CreateRequest) (string, error) {
	ud := req.CloudInit
	if ud == "" && req.StartupScript != "" {
		var err error
		if ud, err = p.cfg.Renderer.UserData(req); err != nil {
			return "", provider.NewError(provider.KindPermanent, "create", req.Name, fmt.Errorf("rendering the user-data: %w", err))
		}
	}
	if len(ud) > MaxUserDataBytes {
		return "", provider.NewError(provider.KindPermanent, "create", req.Name,
			fmt.Errorf("the user-data is %d bytes, over Hetzner's limit of %d", len(ud), MaxUserDataBytes))
	}
	return ud, nil
}

// ensurePrimaryIP returns the proxy's Primary IP, reserving it in loc
// first if it does not exist: named like the server, labelled like it
// (managed, uid, deployment), never deleted with a server (auto_delete
// false), so every server of the proxy has it and the garbage collector
// finds it once no server uses it and no document claims its uid.
func (p *Provider) ensurePrimaryIP(ctx context.Context, req provider.CreateRequest, loc string) (*hcloud.PrimaryIP, error) {
	ip, _, err := p.c.PrimaryIP.GetByName(ctx, req.Name)
	if err != nil {
		return nil, p.wrap("reserve address", req.Name, err)
	}
	if ip == nil {
		autoDelete := false
		res, _, err := p.c.PrimaryIP.Create(ctx, hcloud.PrimaryIPCreateOpts{
			Name: req.Name, Type: hcloud.PrimaryIPTypeIPv4, AssigneeType: "server", AutoDelete: &autoDelete,
			Location: loc, Labels: p.labels(req),
		})
		switch kind := classify(err); {
		case err == nil:
			ip = res.PrimaryIP
		case kind == provider.KindAlreadyExists:
			// Made by a try whose answer was lost: read it.
			if ip, _, err = p.c.PrimaryIP.GetByName(ctx, req.Name); err != nil || ip == nil {
				return nil, provider.NewError(provider.KindTransient, "reserve address", req.Name, fmt.Errorf("the Primary IP of that name could not be read after uniqueness_error: %v", err))
			}
		default:
			return nil, p.wrap("reserve address", req.Name, err)
		}
	}
	if ip.Labels[provider.LabelUID] != req.UID {
		return nil, provider.NewError(provider.KindAlreadyExists, "reserve address", primaryIPID(ip.ID),
			fmt.Errorf("Primary IP %s exists with uid label %q, not %q: it belongs to something else", req.Name, ip.Labels[provider.LabelUID], req.UID))
	}
	if ip.AssigneeID != 0 {
		return nil, provider.NewError(provider.KindTransient, "reserve address", primaryIPID(ip.ID),
			fmt.Errorf("Primary IP %s is still assigned to server %d: %w", ip.IP, ip.AssigneeID, errAssigned))
	}
	return ip, nil
}

// errAssigned says the proxy's Primary IP is on a server.
var errAssigned = errors.New("assigned")
