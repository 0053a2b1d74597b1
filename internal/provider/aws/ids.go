package aws

import (
	"errors"
	"regexp"
	"strings"

	"github.com/egress-proxies/egress/internal/provider"
)

// The prefixes of providerIDs: an instance's, an Elastic IP's. Each
// names the region, since EC2's ids are regional and so is every call.
const (
	instancePrefix = "aws://"
	eipPrefix      = "aws-eip://"
)

func instanceID(region, id string) string { return instancePrefix + region + "/" + id }
func eipID(region, id string) string      { return eipPrefix + region + "/" + id }

// regionPattern is the form of an AWS region name: us-east-1,
// ap-southeast-3, us-gov-west-1.
var regionPattern = regexp.MustCompile(`^[a-z]{2}(-[a-z]+)+-\d{1,2}$`)

// zonePattern is the form of an availability zone's name: its region's
// and a letter (us-east-1a).
var zonePattern = regexp.MustCompile(`^([a-z]{2}(-[a-z]+)+-\d{1,2})[a-z]$`)

// regionOfZone is the region of an availability zone's name, or "".
func regionOfZone(zone string) string {
	if m := zonePattern.FindStringSubmatch(zone); m != nil {
		return m[1]
	}
	return ""
}

var (
	instanceIDPattern = regexp.MustCompile(`^i-[0-9a-f]{8}([0-9a-f]{9})?$`)
	eipIDPattern      = regexp.MustCompile(`^eipalloc-[0-9a-f]{8}([0-9a-f]{9})?$`)
)

// parsed is a providerID split into its kind, region and EC2's id.
type parsed struct {
	eip        bool
	region, id string
}

func parseID(providerID string) (parsed, error) {
	var p parsed
	rest, ok := strings.CutPrefix(providerID, instancePrefix)
	if !ok {
		rest, ok = strings.CutPrefix(providerID, eipPrefix)
		p.eip = ok
	}
	p.region, p.id, _ = strings.Cut(rest, "/")
	idOK := instanceIDPattern.MatchString(p.id)
	if p.eip {
		idOK = eipIDPattern.MatchString(p.id)
	}
	if !ok || !regionPattern.MatchString(p.region) || !idOK {
		return p, provider.NewError(provider.KindPermanent, "parse providerID", providerID,
			errors.New("not of the form aws://REGION/i-… or aws-eip://REGION/eipalloc-…"))
	}
	return p, nil
}
