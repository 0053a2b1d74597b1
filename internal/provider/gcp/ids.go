package gcp

import (
	"errors"
	"regexp"
	"strings"

	"github.com/google/uuid"

	"github.com/egress-proxies/egress/internal/provider"
)

// The prefixes of providerIDs: a VM's, an address's.
const (
	instancePrefix = "gce://"
	addressPrefix  = "gce-address://"
)

// instanceID is the providerID of a VM.
func instanceID(project, zone, name string) string {
	return instancePrefix + project + "/" + zone + "/" + name
}

// addressID is the providerID of a static address.
func addressID(project, region, name string) string {
	return addressPrefix + project + "/" + region + "/" + name
}

var (
	projectRE = regexp.MustCompile(`^[a-z][-a-z0-9.:]{4,61}[a-z0-9]$`)
	regionRE  = regexp.MustCompile(`^[a-z]+(-[a-z]+)+[0-9]+$`)
	zoneRE    = regexp.MustCompile(`^[a-z]+(-[a-z]+)+[0-9]+-[a-z]$`)
	nameRE    = regexp.MustCompile(`^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$`)
)

// parsed is a providerID split strictly into its parts.
type parsed struct {
	address              bool
	project, scope, name string // scope: the zone of a VM, the region of an address
}

func parseID(id string) (parsed, error) {
	var p parsed
	rest, ok := strings.CutPrefix(id, instancePrefix)
	scopeRE := zoneRE
	if !ok {
		if rest, ok = strings.CutPrefix(id, addressPrefix); ok {
			p.address, scopeRE = true, regionRE
		}
	}
	parts := strings.Split(rest, "/")
	if !ok || len(parts) != 3 || !projectRE.MatchString(parts[0]) || !scopeRE.MatchString(parts[1]) || !nameRE.MatchString(parts[2]) {
		return p, provider.NewError(provider.KindPermanent, "parse providerID", id,
			errors.New("not of the form gce://PROJECT/ZONE/NAME or gce-address://PROJECT/REGION/NAME"))
	}
	p.project, p.scope, p.name = parts[0], parts[1], parts[2]
	return p, nil
}

// regionOf is the region of a zone: us-central1 of us-central1-a.
func regionOf(zone string) string {
	if i := strings.LastIndexByte(zone, '-'); i > 0 {
		return zone[:i]
	}
	return zone
}

// requestID is an insert's request id when the caller gave none: a UUID
// derived from the uid and the name, the same for every try. Callers that
// make more than one attempt under one name (a replacement) must give each
// its own (CreateRequest.RequestID): Compute ignores a request id it has
// seen within its window.
func requestID(parts ...string) string {
	return uuid.NewSHA1(requestIDSpace, []byte(strings.Join(parts, "/"))).String()
}

var requestIDSpace = uuid.MustParse("5b0e4f5c-2b8e-4c1e-9d39-7f1b8d6a3e21")
