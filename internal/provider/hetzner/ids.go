package hetzner

import (
	"errors"
	"strconv"
	"strings"

	"github.com/egress-proxies/egress/internal/provider"
)

// The prefixes of providerIDs: a server's, a Primary IP's.
const (
	serverPrefix    = "hcloud://"
	primaryIPPrefix = "hcloud-primary-ip://"
)

func serverID(id int64) string    { return serverPrefix + strconv.FormatInt(id, 10) }
func primaryIPID(id int64) string { return primaryIPPrefix + strconv.FormatInt(id, 10) }

// parsed is a providerID split into its kind and Hetzner's id.
type parsed struct {
	primaryIP bool
	id        int64
}

func parseID(providerID string) (parsed, error) {
	var p parsed
	rest, ok := strings.CutPrefix(providerID, serverPrefix)
	if !ok {
		rest, ok = strings.CutPrefix(providerID, primaryIPPrefix)
		p.primaryIP = ok
	}
	n, err := strconv.ParseInt(rest, 10, 64)
	if !ok || err != nil || n <= 0 || strconv.FormatInt(n, 10) != rest {
		return p, provider.NewError(provider.KindPermanent, "parse providerID", providerID,
			errors.New("not of the form hcloud://SERVER_ID or hcloud-primary-ip://ID"))
	}
	p.id = n
	return p, nil
}
