package store

import (
	"context"
	"errors"
	"fmt"
	"net/url"

	"cloud.google.com/go/firestore"
	"google.golang.org/api/iterator"

	"github.com/egress-proxies/egress/internal/metering"
	"github.com/egress-proxies/egress/internal/proxy"
)

// AccessCursorsCollection holds one document per VM read by pull (hetzner,
// aws), by its providerID: where the reading of its access lines stands
// (proxy.AccessCursor, internal/accesspull). No trigger watches it.
const AccessCursorsCollection = "accesscursors"

// accessLogPath is the spec's accessLog, read with the uid;
// retiringPath the VM a make-before-break rotation is retiring, read with
// the providerID: the two VMs a proxy's access lines may come from.
var (
	accessLogPath = firestore.FieldPath{"spec", "accessLog"}
	retiringPath  = firestore.FieldPath{"reconciler", "retiring"}
)

func (s *Store) accessCursor(providerID string) *firestore.DocumentRef {
	// A providerID holds slashes (hcloud://1, aws://REGION/i-…), which a
	// document ID may not.
	return s.client.Collection(AccessCursorsCollection).Doc(url.PathEscape(providerID))
}

// AccessCursors reads every VM's access cursor, in one query: one read
// per VM read by pull, the VMs gone whose cursors are still there
// included.
func (s *Store) AccessCursors(ctx context.Context) ([]proxy.AccessCursor, error) {
	it := s.client.Collection(AccessCursorsCollection).Documents(ctx)
	defer it.Stop()
	var out []proxy.AccessCursor
	for {
		snap, err := it.Next()
		if errors.Is(err, iterator.Done) {
			queried(ctx, len(out))
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("reading the access cursors: %w", err)
		}
		var c proxy.AccessCursor
		if err := snap.DataTo(&c); err != nil {
			return nil, fmt.Errorf("decoding %s: %w", snap.Ref.Path, err)
		}
		out = append(out, c)
	}
}

// PutAccessCursor writes a VM's access cursor, whatever was there.
func (s *Store) PutAccessCursor(ctx context.Context, c proxy.AccessCursor) error {
	ref := s.accessCursor(c.ProviderID)
	if _, err := ref.Set(ctx, c); err != nil {
		return wrapPath(ref.Path, "writing the access cursor", err)
	}
	metering.Add(ctx, metering.FirestoreWrite, 1)
	return nil
}

// DeleteAccessCursor deletes the access cursor of a VM gone; deleting one
// that is not there is not an error.
func (s *Store) DeleteAccessCursor(ctx context.Context, providerID string) error {
	ref := s.accessCursor(providerID)
	if _, err := ref.Delete(ctx); err != nil {
		return wrapPath(ref.Path, "deleting the access cursor", err)
	}
	metering.Add(ctx, metering.FirestoreWrite, 1)
	return nil
}

// ProxyOfUID finds the proxy document of uid (not a warm pool's member)
// with a collection-group query on the uid, and reads of it only whether
// it keeps an access log (spec.accessLog, on when unset) and the VMs it
// names (status.providerID, reconciler.retiring). No such document is
// proxy.ErrNotFound.
func (s *Store) ProxyOfUID(ctx context.Context, uid string) (proxy.UIDProxy, error) {
	snaps, err := s.client.CollectionGroup(ProxiesCollection).Where(uidPath[0], "==", uid).
		SelectPaths(uidPath, accessLogPath, providerIDPath, retiringPath).Documents(ctx).GetAll()
	queried(ctx, len(snaps))
	if err != nil {
		return proxy.UIDProxy{}, fmt.Errorf("finding the proxy of uid %s: %w", uid, err)
	}
	for _, snap := range snaps {
		k := keyOf(snap.Ref)
		if k.Namespace == "" {
			continue // a pool's member, or its tombstone
		}
		p := proxy.UIDProxy{Key: k, AccessLog: true}
		if v, err := snap.DataAtPath(accessLogPath); err == nil {
			if b, ok := v.(bool); ok {
				p.AccessLog = b
			}
		}
		for _, path := range []firestore.FieldPath{providerIDPath, retiringPath} {
			if id := stringAt(snap, path); id != "" {
				p.VMs = append(p.VMs, id)
			}
		}
		return p, nil
	}
	return proxy.UIDProxy{}, fmt.Errorf("the proxy of uid %s: %w", uid, proxy.ErrNotFound)
}
