package digitalocean

import (
	"context"
	"log/slog"
	"slices"

	"github.com/digitalocean/godo"

	"github.com/egress-proxies/egress/internal/provider"
)

// A residue is a tag this deployment made that a crash (or a fault) left
// behind empty, listed by ListByTag as a resource of its own, in state
// Terminated, so the garbage collector deletes it under its usual rules:
// never while its uid is claimed, never before its grace period, never
// another deployment's. There are two kinds:
//
//   - A Droplet's own tag (tags.go) that tags nothing: its Droplet is
//     gone, and the Delete that destroyed it did not get to delete its
//     tags (a crash, a fault, or a Droplet someone else destroyed). Its
//     deletion deletes the uid's tag first, then the own tag.
//   - A record (reservedip.go) whose address the account no longer has:
//     the address was released and the record's delete did not follow.
//
// Why the collector and not ListByTag itself, nor the next Delete: the
// collector is what knows whether the uid is still claimed, and a
// claimed uid's tag is one its proxy's next Droplet carries (a Create
// racing a tag's delete would lose its uid's tag, DigitalOcean's delete
// of a tag taking it off every resource); a listing that deletes would
// also break the collector's dry run and its cap on deletes per run.
// Only the own tag names its deployment, so a residue is only ever one
// of this deployment's: a uid's tag or a status id tag left alone (by a
// Droplet made before the own tag) names none and is never touched.
// The residue of a uid that a listed Droplet carries is not listed at
// all: its proxy lives, and its Droplet's state is what the collector's
// sweep must read for that uid.

// residues are the tags ListByTag lists: this deployment's own tags that
// tag nothing and its records whose address is gone, but those of a uid
// in live.
func (p *Provider) residues(tags []godo.Tag, ips []godo.ReservedIP, live map[string]bool) []provider.Instance {
	var out []provider.Instance
	for _, t := range tags {
		if t.Resources == nil || t.Resources.Count > 0 {
			// Tags something, or does not say: not a residue.
			continue
		}
		if o, ok := parseOwnTag(t.Name); ok && o.Deployment == p.cfg.Deployment && !live[o.UID] {
			out = append(out, ownResidue(o))
		}
		if r, ok := parseRecord(t.Name); ok && r.Deployment == p.cfg.Deployment && !live[r.UID] &&
			!slices.ContainsFunc(ips, func(ip godo.ReservedIP) bool { return ip.IP == r.Address }) {
			out = append(out, provider.Instance{ID: tagID(t.Name), State: provider.StateTerminated, UID: r.UID, Deployment: r.Deployment, CreatedAt: r.Created})
		}
	}
	return out
}

// ownResidue is a Droplet's own tag as a residue: its uid, its
// deployment, and when its Droplet was made.
func ownResidue(o ownTag) provider.Instance {
	return provider.Instance{ID: tagID(o.Tag), State: provider.StateTerminated, UID: o.UID, Deployment: o.Deployment, CreatedAt: o.Created}
}

// getResidue reads a residue: there while its tag is.
func (p *Provider) getResidue(ctx context.Context, providerID, tag string) (*provider.Instance, error) {
	if _, _, err := p.c.Tags.Get(ctx, tag); err != nil {
		return nil, p.wrap("get", providerID, err)
	}
	var out provider.Instance
	if o, ok := parseOwnTag(tag); ok {
		out = ownResidue(o)
	} else if r, ok := parseRecord(tag); ok {
		out = provider.Instance{ID: providerID, State: provider.StateTerminated, UID: r.UID, Deployment: r.Deployment, CreatedAt: r.Created}
	}
	return &out, nil
}

// deleteResidue deletes a residue's tags, idempotently. A Droplet's own
// tag goes after its uid's tag, and neither while a Droplet not being
// destroyed carries it; a record goes only while the account has not its
// address (an address handed out again is recorded anew by its reserve).
func (p *Provider) deleteResidue(ctx context.Context, providerID, tag string) error {
	if r, ok := parseRecord(tag); ok {
		_, _, err := p.c.ReservedIPs.Get(ctx, r.Address)
		switch kind := classify(err); {
		case err == nil:
			p.cfg.Log.Info("digitalocean record kept: its address is there again", slog.String("providerID", providerID), slog.String("address", r.Address))
			return nil
		case kind != provider.KindNotFound:
			return p.wrap("delete", providerID, err)
		}
		if _, err := p.c.Tags.Delete(ctx, tag); err != nil && classify(err) != provider.KindNotFound {
			return p.wrap("delete", providerID, err)
		}
		return nil
	}
	o, _ := parseOwnTag(tag)
	carried, err := p.carriedElsewhere(ctx, uidTag(o.UID), 0)
	if err != nil {
		return p.wrap("delete", providerID, err)
	}
	return p.deleteTags(ctx, providerID, []string{uidTag(o.UID), tag}, carried)
}
