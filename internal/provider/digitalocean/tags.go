package digitalocean

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/vmstatus"
)

// DigitalOcean has tags, not labels: a tag is a plain name of letters,
// digits, ':', '-' and '_', at most 255 characters, and a list of
// Droplets filters on one tag (GET /v2/droplets?tag_name=). So each of
// the contract's labels is one tag, KEY:VALUE, split at its first ':'.
// The keys have no ':'; a value keeps the lower-case letters, digits
// and '-' it has, and every other byte (an upper-case letter, '_', ':',
// anything else) is written as '_' and two lower-case hex digits. So a
// value of any text round-trips, a uid or a deployment name (lower-case
// letters, digits and '-') reads as itself, and no two values share a
// tag even where DigitalOcean compares tags without regard to case.
//
//	proxy-operator-managed:true        provider.LabelManaged
//	proxy-operator-uid:UID             provider.LabelUID
//	egress-deployment:NAME             provider.LabelDeployment
//	egress-proxy-port:3128             a Droplet that runs the default bootstrap
//	egress-static-ip:true              a Droplet of a Static proxy
//	egress-status-id:ID                vmside.LabelStatusID, on Droplets made
//	                                   before the Droplet's own tag (below)
//
// Every Droplet also has a tag of its own, which is not a label:
//
//	egress-droplet:DEPLOYMENT:UID:ID:CREATED
//
// the deployment and uid encoded as label values are, ID the Droplet's
// status id (vmside.LabelStatusID, which it holds for the Droplets that
// run the default bootstrap: one tag, not two), and when it was made
// (Unix seconds). DigitalOcean keeps a tag when nothing carries it any
// more, and every listing pages through all of them, so a Droplet's own
// tags (this one and its uid's) are deleted with it (delete.go). This
// one is deleted last: until it goes, it says, by its name alone, whose
// tags are left and which deployment made them, so a crash that leaves
// them empty leaves a residue ListByTag lists and the collector deletes
// (residue.go), and never another deployment's or a person's tag.
const (
	tagProbePort  = "egress-proxy-port"
	tagStaticIP   = "egress-static-ip"
	dropletTagKey = "egress-droplet"
	// maxTagBytes is DigitalOcean's limit on a tag's name.
	maxTagBytes = 255
)

// Tag is the tag of the label key=value.
func Tag(key, value string) string { return key + ":" + encodeValue(value) }

// encodeValue escapes what a tag cannot hold, and upper case.
func encodeValue(v string) string {
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' {
			b.WriteByte(c)
			continue
		}
		fmt.Fprintf(&b, "_%02x", c)
	}
	return b.String()
}

// decodeValue reverses encodeValue, reporting false for a value it
// cannot have written.
func decodeValue(v string) (string, bool) {
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' {
			b.WriteByte(c)
			continue
		}
		if c != '_' {
			return "", false
		}
		if i+2 >= len(v) {
			return "", false
		}
		n, err := strconv.ParseUint(v[i+1:i+3], 16, 8)
		if err != nil {
			return "", false
		}
		b.WriteByte(byte(n))
		i += 2
	}
	// One tag per value: an escape encodeValue does not write (of a
	// letter, in upper-case hex) is no value's.
	if encodeValue(b.String()) != v {
		return "", false
	}
	return b.String(), true
}

// Labels reads the labels back off a resource's tags: every tag of the
// form KEY:VALUE this encoding could have written. Tags of other forms
// (an operator's own, "web", a reserved IP's record) are not labels, and
// are left out.
func Labels(tags []string) map[string]string {
	out := map[string]string{}
	for _, t := range tags {
		k, v, ok := strings.Cut(t, ":")
		if !ok || k == "" {
			continue
		}
		if dv, ok := decodeValue(v); ok {
			out[k] = dv
		}
	}
	return out
}

// ManagedTag is the tag ListByTag lists Droplets by: every Droplet this
// product made carries it, whatever its deployment.
var ManagedTag = Tag(provider.LabelManaged, provider.LabelManagedYes)

// DeploymentTag is the tag of deployment's Droplets, which the
// deployment's cloud firewall is applied by.
func DeploymentTag(deployment string) string { return Tag(provider.LabelDeployment, deployment) }

// uidTag is the tag a create finds the proxy's Droplets by.
func uidTag(uid string) string { return Tag(provider.LabelUID, uid) }

// tagsFor are the tags of the Droplet made for req: the contract's three,
// the VM side's and the Droplet's own, all in the create call.
func (p *Provider) tagsFor(req provider.CreateRequest) ([]string, error) {
	tags := []string{ManagedTag, uidTag(req.UID), DeploymentTag(p.cfg.Deployment)}
	if req.StartupScript != "" && req.CloudInit == "" {
		tags = append(tags, Tag(tagProbePort, strconv.Itoa(int(req.Port))))
	}
	tags = append(tags, dropletTag(p.cfg.Deployment, req.UID, statusID(req), p.cfg.Now()))
	if req.StaticIP {
		tags = append(tags, Tag(tagStaticIP, "true"))
	}
	for _, t := range tags {
		if len(t) > maxTagBytes {
			return nil, provider.NewError(provider.KindPermanent, "create", req.Name,
				fmt.Errorf("the tag %.40q… is %d bytes, over DigitalOcean's %d: the uid is too long to tag a Droplet with", t, len(t), maxTagBytes))
		}
	}
	return tags, nil
}

// ownTag is a parsed Droplet's own tag (egress-droplet:…).
type ownTag struct {
	Tag        string
	Deployment string
	UID        string
	// ID is the Droplet's status id: a hash of its uid and create request,
	// so one per create, and the one its bootstrap answers with.
	ID      string
	Created time.Time
}

func dropletTag(deployment, uid, id string, created time.Time) string {
	return strings.Join([]string{dropletTagKey, encodeValue(deployment), encodeValue(uid), id, strconv.FormatInt(created.Unix(), 10)}, ":")
}

// parseOwnTag reads a Droplet's own tag, reporting false for any other
// tag.
func parseOwnTag(tag string) (ownTag, bool) {
	parts := strings.SplitN(tag, ":", 5)
	if len(parts) != 5 || parts[0] != dropletTagKey {
		return ownTag{}, false
	}
	dep, okD := decodeValue(parts[1])
	uid, okU := decodeValue(parts[2])
	secs, err := strconv.ParseInt(parts[4], 10, 64)
	// One tag per Droplet: a time dropletTag does not write ("01") is no
	// Droplet's.
	if !okD || !okU || dep == "" || uid == "" || vmstatus.CheckStatusID(parts[3]) != nil || err != nil || strconv.FormatInt(secs, 10) != parts[4] {
		return ownTag{}, false
	}
	return ownTag{Tag: tag, Deployment: dep, UID: uid, ID: parts[3], Created: time.Unix(secs, 0).UTC()}, true
}

// ownTagOf is the Droplet's own tag among its tags, if it has one (a
// Droplet made before it has not).
func ownTagOf(tags []string) (ownTag, bool) {
	for _, t := range tags {
		if o, ok := parseOwnTag(t); ok {
			return o, true
		}
	}
	return ownTag{}, false
}
