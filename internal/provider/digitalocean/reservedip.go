package digitalocean

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/digitalocean/godo"

	"github.com/egress-proxies/egress/internal/provider"
)

// recordKey begins the tag that records which proxy owns a reserved IP:
// DigitalOcean's reserved IPs carry no name and no tag, and a tag may
// exist tagging nothing, so the record is a tag of its own,
//
//	egress-reserved-ip:203-0-113-7:1765000000:DEPLOYMENT:UID
//
// the address (dots as dashes), when it was reserved (Unix seconds: a
// reserved IP has no creation time, and the collector spares young
// resources), and the deployment and uid encoded as tags.go encodes label
// values. 19 + 16 + 11 + 4 separators and a deployment of at most 63
// bytes leave a uid 140 bytes, within DigitalOcean's 255.
const recordKey = "egress-reserved-ip"

// record is a parsed record tag.
type record struct {
	Tag        string
	Address    string
	Created    time.Time
	Deployment string
	UID        string
}

func recordTag(addr string, created time.Time, deployment, uid string) string {
	return strings.Join([]string{recordKey, strings.ReplaceAll(addr, ".", "-"), strconv.FormatInt(created.Unix(), 10),
		encodeValue(deployment), encodeValue(uid)}, ":")
}

// parseRecord reads a record tag, reporting false for any other tag.
func parseRecord(tag string) (record, bool) {
	parts := strings.SplitN(tag, ":", 5)
	if len(parts) != 5 || parts[0] != recordKey {
		return record{}, false
	}
	secs, err := strconv.ParseInt(parts[2], 10, 64)
	dep, okD := decodeValue(parts[3])
	uid, okU := decodeValue(parts[4])
	if err != nil || !okD || !okU || uid == "" {
		return record{}, false
	}
	return record{Tag: tag, Address: strings.ReplaceAll(parts[1], "-", "."), Created: time.Unix(secs, 0).UTC(), Deployment: dep, UID: uid}, true
}

type records []record

// of is the record of an address.
func (rs records) of(addr string) (record, bool) {
	for _, r := range rs {
		if r.Address == addr {
			return r, true
		}
	}
	return record{}, false
}

// ofUID is the record of a proxy of deployment.
func (rs records) ofUID(uid, deployment string) (record, bool) {
	for _, r := range rs {
		if r.UID == uid && r.Deployment == deployment {
			return r, true
		}
	}
	return record{}, false
}

// records reads every record tag of the account.
func (p *Provider) records(ctx context.Context) (records, error) {
	tags, err := p.tags(ctx)
	if err != nil {
		return nil, err
	}
	return recordsOf(tags), nil
}

// tags reads every tag of the account, with what each tags.
func (p *Provider) tags(ctx context.Context) ([]godo.Tag, error) {
	tags, err := listAll(ctx, func(opt *godo.ListOptions) ([]godo.Tag, *godo.Response, error) { return p.c.Tags.List(ctx, opt) })
	if err != nil {
		return nil, p.wrap("list", "tags", err)
	}
	return tags, nil
}

// recordsOf are the records among tags.
func recordsOf(tags []godo.Tag) records {
	var out records
	for _, t := range tags {
		if r, ok := parseRecord(t.Name); ok {
			out = append(out, r)
		}
	}
	return out
}

// recordHeld writes the record of the reserved IP a Static proxy's
// Droplet d holds when it has none, before d is destroyed. A reserve
// onto d whose record a crash (or a fault) kept from being written is
// recorded by the next Get of d; this is the Delete that may come before
// any Get (the proxy deleted, or replaced), after which the address,
// unassigned and without a record, would be one nothing names. A record
// that names another proxy is one a released address left (the address
// was handed out again): the Droplet that holds it says whose it is.
func (p *Provider) recordHeld(ctx context.Context, providerID string, d *godo.Droplet) error {
	uid := convert(d).UID
	if uid == "" {
		return nil
	}
	ips, err := p.reservedIPs(ctx)
	if err != nil {
		return err
	}
	for _, ip := range ips {
		if ip.Droplet == nil || ip.Droplet.ID != d.ID {
			continue
		}
		recs, err := p.records(ctx)
		if err != nil {
			return err
		}
		if rec, ok := recs.of(ip.IP); ok && rec.UID == uid && rec.Deployment == p.cfg.Deployment {
			return nil
		}
		p.cfg.Log.Info("digitalocean reserved IP recorded before its droplet is destroyed", slog.String("address", ip.IP), slog.String("providerID", providerID), slog.String("uid", uid))
		return p.writeRecord(ctx, recs, ip.IP, uid)
	}
	return nil
}

// reservedIPs reads every reserved IP of the account.
func (p *Provider) reservedIPs(ctx context.Context) ([]godo.ReservedIP, error) {
	ips, err := listAll(ctx, func(opt *godo.ListOptions) ([]godo.ReservedIP, *godo.Response, error) {
		return p.c.ReservedIPs.List(ctx, opt)
	})
	if err != nil {
		return nil, p.wrap("list", "reserved IPs", err)
	}
	return ips, nil
}

// proxyAddress is the reserved IP the proxy of uid has, by its record; nil
// when it has none. A record whose address is gone is dropped.
func (p *Provider) proxyAddress(ctx context.Context, uid string) (*godo.ReservedIP, error) {
	recs, err := p.records(ctx)
	if err != nil {
		return nil, err
	}
	rec, ok := recs.ofUID(uid, p.cfg.Deployment)
	if !ok {
		return nil, nil
	}
	rip, _, err := p.c.ReservedIPs.Get(ctx, rec.Address)
	switch {
	case classify(err) == provider.KindNotFound:
		return nil, p.dropRecords(ctx, recs, rec.Address)
	case err != nil:
		return nil, p.wrap("get", reservedIPID(rec.Address), err)
	}
	return rip, nil
}

// holdAddress gives the active Droplet d of a Static proxy the proxy's
// reserved IP, and returns the address once d holds it, "" while it does
// not yet: the proxy's address is assigned to d once the Droplet it was
// on is gone; a proxy without one gets one reserved onto d, whose record
// is written after it (a Droplet's tags name the address's owner until
// then, and a try that crashed before its record is finished here).
func (p *Provider) holdAddress(ctx context.Context, d *godo.Droplet, uid string) (string, error) {
	target := dropletID(d.ID)
	recs, err := p.records(ctx)
	if err != nil {
		return "", err
	}
	if rec, ok := recs.ofUID(uid, p.cfg.Deployment); ok {
		rip, _, err := p.c.ReservedIPs.Get(ctx, rec.Address)
		switch {
		case classify(err) == provider.KindNotFound:
			// Released behind the record's back: the proxy gets a new one.
			if err := p.dropRecords(ctx, recs, rec.Address); err != nil {
				return "", err
			}
		case err != nil:
			return "", p.wrap("get", target, err)
		case rip.Droplet != nil && rip.Droplet.ID == d.ID:
			return rip.IP, nil
		case rip.Droplet != nil:
			// The proxy's previous Droplet still holds it while
			// DigitalOcean destroys it: the next Get assigns it.
			p.cfg.Log.Debug("digitalocean reserved IP still on the previous droplet", slog.String("address", rip.IP), slog.Int("holder", rip.Droplet.ID), slog.String("providerID", target))
			return "", nil
		case rip.Region != nil && d.Region != nil && rip.Region.Slug != d.Region.Slug:
			return "", provider.NewError(provider.KindPermanent, "get", target,
				fmt.Errorf("the Droplet is in %s and the proxy's reserved IP %s in %s: a reserved IP is assigned in its own region only", d.Region.Slug, rip.IP, rip.Region.Slug))
		default:
			if _, _, err := p.c.ReservedIPActions.Assign(ctx, rip.IP, d.ID); err != nil {
				return "", p.wrap("get", target, err)
			}
			p.cfg.Log.Info("digitalocean reserved IP assigned", slog.String("address", rip.IP), slog.String("providerID", target))
			return "", nil
		}
	}
	ips, err := p.reservedIPs(ctx)
	if err != nil {
		return "", err
	}
	for _, ip := range ips {
		if ip.Droplet != nil && ip.Droplet.ID == d.ID {
			// Reserved onto d by a try that crashed before its record.
			return ip.IP, p.writeRecord(ctx, recs, ip.IP, uid)
		}
	}
	rip, _, err := p.c.ReservedIPs.Create(ctx, &godo.ReservedIPCreateRequest{DropletID: d.ID})
	switch kind := classify(err); {
	case err == nil:
	case kind == provider.KindQuota:
		return "", p.quota(ctx, target, err)
	default:
		return "", p.wrap("get", target, err)
	}
	p.cfg.Log.Info("digitalocean reserved IP reserved", slog.String("address", rip.IP), slog.String("providerID", target))
	return "", p.writeRecord(ctx, recs, rip.IP, uid)
}

// writeRecord records that the proxy of uid owns addr, dropping the
// records an address released before left (a released address can be
// handed out again).
func (p *Provider) writeRecord(ctx context.Context, recs records, addr, uid string) error {
	if err := p.dropRecords(ctx, recs, addr); err != nil {
		return err
	}
	tag := recordTag(addr, p.cfg.Now(), p.cfg.Deployment, uid)
	if _, _, err := p.c.Tags.Create(ctx, &godo.TagCreateRequest{Name: tag}); err != nil {
		return p.wrap("record address", reservedIPID(addr), err)
	}
	return nil
}

// dropRecords deletes the records of addr.
func (p *Provider) dropRecords(ctx context.Context, recs records, addr string) error {
	for _, r := range recs {
		if r.Address != addr {
			continue
		}
		if _, err := p.c.Tags.Delete(ctx, r.Tag); err != nil && classify(err) != provider.KindNotFound {
			return p.wrap("drop record", reservedIPID(addr), err)
		}
	}
	return nil
}

// getReservedIP reads a reserved IP as an instance of its own kind: held
// by a Droplet (Running) or not (Terminated), with its record's uid,
// deployment and time.
func (p *Provider) getReservedIP(ctx context.Context, providerID, addr string) (*provider.Instance, error) {
	rip, _, err := p.c.ReservedIPs.Get(ctx, addr)
	if err != nil {
		return nil, p.wrap("get", providerID, err)
	}
	recs, err := p.records(ctx)
	if err != nil {
		return nil, err
	}
	var rec *record
	if r, ok := recs.of(addr); ok {
		rec = &r
	}
	out := convertReservedIP(rip, rec)
	return &out, nil
}

func convertReservedIP(ip *godo.ReservedIP, rec *record) provider.Instance {
	out := provider.Instance{ID: reservedIPID(ip.IP), IP: ip.IP, State: provider.StateTerminated}
	if ip.Droplet != nil {
		out.State = provider.StateRunning
	}
	if ip.Region != nil {
		out.Zone = ip.Region.Slug
	}
	if rec != nil {
		out.UID, out.Deployment, out.CreatedAt = rec.UID, rec.Deployment, rec.Created
	}
	return out
}

// releaseReservedIP releases the address, then its records: in that
// order, since a record without its address costs nothing and an address
// without its record is one nothing names.
func (p *Provider) releaseReservedIP(ctx context.Context, providerID, addr string) error {
	rip, _, err := p.c.ReservedIPs.Get(ctx, addr)
	switch kind := classify(err); {
	case kind == provider.KindNotFound:
	case err != nil:
		return p.wrap("delete", providerID, err)
	case rip.Droplet != nil:
		return provider.NewError(provider.KindTransient, "delete", providerID, errHeld(addr, rip.Droplet.ID))
	default:
		if _, err := p.c.ReservedIPs.Delete(ctx, addr); err != nil && classify(err) != provider.KindNotFound {
			return p.wrap("delete", providerID, err)
		}
	}
	recs, err := p.records(ctx)
	if err != nil {
		return err
	}
	return p.dropRecords(ctx, recs, addr)
}
