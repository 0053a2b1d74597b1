package digitalocean

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"github.com/digitalocean/godo"

	"github.com/egress-proxies/egress/internal/provider"
)

// Create makes the Droplet and returns without waiting for it.
// DigitalOcean has no request token and does not keep a Droplet's name
// unique, so a create first finds: the Droplets tagged with the proxy's
// uid, of the request's name, not being destroyed; the first of them is
// adopted, and only when there is none is a Droplet made, with every tag
// in its create call (the package doc says what a crash between the find
// and the create can leave). A placement without a region slug gets one
// of its metro's allowed regions, chosen from the uid and past
// req.AvoidZones; a Static proxy whose reserved IP exists goes to the
// address's region.
func (p *Provider) Create(ctx context.Context, req provider.CreateRequest) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", provider.NewError(provider.KindTransient, "create", req.Name, err)
	}
	userData, err := p.userData(req)
	if err != nil {
		return "", err
	}
	tags, err := p.tagsFor(req)
	if err != nil {
		return "", err
	}
	if id, ok, err := p.find(ctx, req); err != nil || ok {
		return id, err
	}
	region, pinned, err := p.chooseRegion(ctx, req)
	if err != nil {
		return "", err
	}
	if err := p.ensureFirewall(ctx); err != nil {
		return "", err
	}
	sshKeys := []godo.DropletCreateSSHKey{}
	for _, k := range p.cfg.SSHKeys {
		sshKeys = append(sshKeys, sshKey(k))
	}
	d, _, err := p.c.Droplets.Create(ctx, &godo.DropletCreateRequest{
		Name:     req.Name,
		Region:   region,
		Size:     cmp.Or(req.Placement.MachineType, DefaultSize),
		Image:    godo.DropletCreateImage{Slug: cmp.Or(req.Placement.Image, DefaultImage)},
		SSHKeys:  sshKeys,
		IPv6:     true,
		UserData: userData,
		Tags:     tags,
	})
	switch kind := classify(err); {
	case err == nil:
		p.cfg.Log.Info("digitalocean droplet created", slog.String("droplet", req.Name), slog.String("providerID", dropletID(d.ID)), slog.String("region", region))
		return dropletID(d.ID), nil
	case kind == provider.KindCapacity:
		e := provider.NewError(provider.KindCapacity, "create", req.Name, err)
		if !pinned && req.Placement.Zone == "" {
			e.Zone = region
		}
		p.cfg.Log.Info("digitalocean region out of capacity", slog.String("region", region), slog.String("droplet", req.Name), slog.Any("error", err))
		return "", e
	case kind == provider.KindQuota:
		return "", p.quota(ctx, req.Name, err)
	default:
		return "", p.wrap("create", req.Name, err)
	}
}

// sshKey is an SSH key by its id, or by its fingerprint.
func sshKey(k string) godo.DropletCreateSSHKey {
	var id int
	if _, err := fmt.Sscan(k, &id); err == nil && fmt.Sprint(id) == k {
		return godo.DropletCreateSSHKey{ID: id}
	}
	return godo.DropletCreateSSHKey{Fingerprint: k}
}

// find returns the Droplet of req's name among those tagged with its uid,
// reporting whether there is one. Several (a duplicate a raced create
// made) are logged, and the oldest is the proxy's: the collector takes
// the others.
func (p *Provider) find(ctx context.Context, req provider.CreateRequest) (string, bool, error) {
	droplets, err := listAll(ctx, func(opt *godo.ListOptions) ([]godo.Droplet, *godo.Response, error) {
		return p.c.Droplets.ListByTag(ctx, uidTag(req.UID), opt)
	})
	if err != nil {
		return "", false, p.wrap("create", req.Name, err)
	}
	var mine []godo.Droplet
	for _, d := range droplets {
		if d.Name == req.Name && d.Status != statusArchive && Labels(d.Tags)[provider.LabelUID] == req.UID {
			mine = append(mine, d)
		}
	}
	if len(mine) == 0 {
		return "", false, nil
	}
	slices.SortFunc(mine, func(a, b godo.Droplet) int { return a.ID - b.ID })
	if len(mine) > 1 {
		p.cfg.Log.Warn("digitalocean droplets of one name and uid: the oldest is adopted, the collector takes the others",
			slog.String("droplet", req.Name), slog.Int("count", len(mine)))
	}
	p.cfg.Log.Debug("digitalocean droplet of that name adopted", slog.String("droplet", req.Name), slog.String("providerID", dropletID(mine[0].ID)))
	return dropletID(mine[0].ID), true, nil
}

// chooseRegion is the placement's region, the Static proxy's address's
// (pinned), or one of its metro's allowed regions chosen from the uid,
// past those to avoid.
func (p *Provider) chooseRegion(ctx context.Context, req provider.CreateRequest) (string, bool, error) {
	pl := req.Placement
	if req.StaticIP {
		rip, err := p.proxyAddress(ctx, req.UID)
		if err != nil {
			return "", false, err
		}
		if rip != nil && rip.Region != nil {
			region := rip.Region.Slug
			if slices.Contains(req.AvoidZones, region) {
				return "", false, provider.NewError(provider.KindCapacity, "create", req.Name,
					fmt.Errorf("region %s, where the proxy's reserved IP %s is, was out of capacity; a Static proxy waits for it", region, rip.IP))
			}
			return region, true, nil
		}
	}
	if pl.Zone != "" {
		if metroOf[pl.Zone] == "" {
			return "", false, provider.NewError(provider.KindPermanent, "create", req.Name, fmt.Errorf("%q is not a DigitalOcean region (%s)", pl.Zone, regionList()))
		}
		return pl.Zone, false, nil
	}
	regions := metros.Allowed(pl.Region, p.cfg.Regions)
	if len(regions) == 0 {
		return "", false, provider.NewError(provider.KindPermanent, "create", req.Name,
			fmt.Errorf("metro %q has no allowed region (metros: %s)", pl.Region, metroList()))
	}
	region, ok := provider.ChooseZone(req.UID, regions, req.AvoidZones)
	if !ok {
		return "", false, provider.NewError(provider.KindCapacity, "create", req.Name,
			fmt.Errorf("every region of %s was out of capacity for this proxy: %s", pl.Region, strings.Join(req.AvoidZones, ", ")))
	}
	return region, false, nil
}

// userData is what the Droplet boots with: a spec's own cloud-init as it
// is, or the default bootstrap as the Renderer makes it; within
// DigitalOcean's limit either way.
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
			fmt.Errorf("the user-data is %d bytes, over DigitalOcean's limit of %d", len(ud), MaxUserDataBytes))
	}
	return ud, nil
}

// quota is the error of a create past the account's Droplet limit (or
// reserved IP limit), with the limit the account has, so the proxy's
// status says what to ask DigitalOcean for.
func (p *Provider) quota(ctx context.Context, target string, err error) error {
	e := provider.NewError(provider.KindQuota, "create", target, err)
	if acct, _, aerr := p.c.Account.Get(ctx); aerr == nil && acct != nil && strings.Contains(strings.ToLower(err.Error()), "droplet limit") {
		e.Err = fmt.Errorf("the account's Droplet limit (%d) is reached: delete Droplets, or ask DigitalOcean to raise it; %w", acct.DropletLimit, err)
	}
	p.cfg.Log.Warn("digitalocean account limit reached", slog.String("target", target), slog.Any("error", e.Err))
	return e
}
