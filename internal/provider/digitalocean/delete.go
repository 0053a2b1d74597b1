package digitalocean

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/digitalocean/godo"

	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/provider/vmside"
)

// Delete destroys the Droplet and then deletes its own tags, releases
// the reserved IP a reserved IP's ID names, or deletes the residue a
// residue's ID names (residue.go). What is already gone is success, and
// so is a Droplet already being destroyed (whose tags are deleted all
// the same: a Delete that failed after the destroy is tried again); a
// reserved IP a Droplet still holds is refused as transient, since the
// Droplet goes first.
//
// Before a Static proxy's Droplet is destroyed, the reserved IP it holds
// gets its record if it has none (recordHeld): the package doc's "What a
// crash can leave" says why.
func (p *Provider) Delete(ctx context.Context, providerID string) error {
	id, err := parseID(providerID)
	if err != nil {
		return err
	}
	switch {
	case id.address != "":
		return p.releaseReservedIP(ctx, providerID, id.address)
	case id.tag != "":
		return p.deleteResidue(ctx, providerID, id.tag)
	}
	d, _, err := p.c.Droplets.Get(ctx, id.droplet)
	switch kind := classify(err); {
	case kind == provider.KindNotFound:
		return nil
	case err != nil:
		return p.wrap("delete", providerID, err)
	}
	if d.Status != statusArchive {
		if Labels(d.Tags)[tagStaticIP] == "true" {
			if err := p.recordHeld(ctx, providerID, d); err != nil {
				return err
			}
		}
		if _, err := p.c.Droplets.Delete(ctx, id.droplet); err != nil && classify(err) != provider.KindNotFound {
			return p.wrap("delete", providerID, err)
		}
	}
	return p.dropOwnTags(ctx, providerID, d)
}

// dropOwnTags deletes the tags that are the Droplet d's alone, once it is
// being destroyed: DigitalOcean keeps a tag that tags nothing, and every
// listing reads all of them. They are its uid's tag (its proxy's next
// Droplet makes it again), the status id tag of a Droplet made before its
// own tag, and its own tag, last: a Delete cut short before it leaves the
// own tag, which names the rest (residue.go). A tag that another Droplet
// not being destroyed carries (a duplicate a raced create made, which the
// collector takes with its tags) is kept: deleting a tag takes it off
// every resource.
func (p *Provider) dropOwnTags(ctx context.Context, providerID string, d *godo.Droplet) error {
	labels := Labels(d.Tags)
	own, hasOwn := ownTagOf(d.Tags)
	var mine []string
	if sid, ok := labels[vmside.LabelStatusID]; ok {
		mine = append(mine, Tag(vmside.LabelStatusID, sid))
	}
	if uid := labels[provider.LabelUID]; uid != "" {
		mine = append(mine, uidTag(uid))
	}
	if hasOwn {
		mine = append(mine, own.Tag)
	}
	if len(mine) == 0 {
		return nil
	}
	// A duplicate carries the uid's tag (and its own tag, the same when
	// it is of the same create): one list finds it.
	by := own.Tag
	if uid := labels[provider.LabelUID]; uid != "" {
		by = uidTag(uid)
	}
	carried, err := p.carriedElsewhere(ctx, by, d.ID)
	if err != nil {
		return p.wrap("delete", providerID, err)
	}
	return p.deleteTags(ctx, providerID, mine, carried)
}

// errHeld is the refusal of a reserved IP a Droplet holds.
func errHeld(address string, droplet int) error {
	return fmt.Errorf("the reserved IP %s is still assigned to Droplet %d; it is released once the Droplet is gone", address, droplet)
}

// carriedElsewhere are the tags of the Droplets tagged by, other than
// the Droplet self and those being destroyed.
func (p *Provider) carriedElsewhere(ctx context.Context, by string, self int) (map[string]bool, error) {
	droplets, err := listAll(ctx, func(opt *godo.ListOptions) ([]godo.Droplet, *godo.Response, error) {
		return p.c.Droplets.ListByTag(ctx, by, opt)
	})
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for _, d := range droplets {
		if d.ID == self || d.Status == statusArchive {
			continue
		}
		for _, t := range d.Tags {
			out[t] = true
		}
	}
	return out, nil
}

// deleteTags deletes tags in their order, but those carried; one already
// gone is no error (a Delete tried again).
func (p *Provider) deleteTags(ctx context.Context, providerID string, tags []string, carried map[string]bool) error {
	var kept []string
	for _, t := range tags {
		if carried[t] {
			kept = append(kept, t)
			continue
		}
		if _, err := p.c.Tags.Delete(ctx, t); err != nil && classify(err) != provider.KindNotFound {
			return p.wrap("delete tag "+t, providerID, err)
		}
	}
	if len(kept) > 0 {
		p.cfg.Log.Info("digitalocean tags kept: another droplet carries them", slog.String("providerID", providerID), slog.Any("tags", kept))
	}
	return nil
}
