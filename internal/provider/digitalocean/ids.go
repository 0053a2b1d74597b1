package digitalocean

import (
	"errors"
	"net/netip"
	"strconv"
	"strings"

	"github.com/egress-proxies/egress/internal/provider"
)

// The prefixes of providerIDs: a Droplet's, a reserved IP's (whose id is
// its address, as DigitalOcean names it), and a residue's: a tag left
// empty, named by itself (residue.go).
const (
	dropletPrefix    = "digitalocean://"
	reservedIPPrefix = "digitalocean-reserved-ip://"
	tagPrefix        = "digitalocean-tag://"
)

func dropletID(id int) string       { return dropletPrefix + strconv.Itoa(id) }
func reservedIPID(ip string) string { return reservedIPPrefix + ip }
func tagID(tag string) string       { return tagPrefix + tag }

// parsed is a providerID split into its kind and DigitalOcean's id.
type parsed struct {
	droplet int
	address string // a reserved IP's, when this is one
	tag     string // a residue's tag, when this is one
}

func parseID(providerID string) (parsed, error) {
	bad := provider.NewError(provider.KindPermanent, "parse providerID", providerID,
		errors.New("not of the form digitalocean://DROPLET_ID, digitalocean-reserved-ip://ADDRESS or digitalocean-tag://TAG (a Droplet's own tag or a reserved IP's record)"))
	if rest, ok := strings.CutPrefix(providerID, tagPrefix); ok {
		_, own := parseOwnTag(rest)
		_, rec := parseRecord(rest)
		if !own && !rec {
			return parsed{}, bad
		}
		return parsed{tag: rest}, nil
	}
	if rest, ok := strings.CutPrefix(providerID, reservedIPPrefix); ok {
		a, err := netip.ParseAddr(rest)
		if err != nil || !a.Is4() || a.String() != rest {
			return parsed{}, bad
		}
		return parsed{address: rest}, nil
	}
	rest, ok := strings.CutPrefix(providerID, dropletPrefix)
	n, err := strconv.Atoi(rest)
	if !ok || err != nil || n <= 0 || strconv.Itoa(n) != rest {
		return parsed{}, bad
	}
	return parsed{droplet: n}, nil
}
