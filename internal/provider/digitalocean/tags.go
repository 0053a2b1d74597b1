package digitalocean

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/provider/vmside"
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
//	egress-status-id:ID                vmside.LabelStatusID
//	egress-proxy-port:3128             a Droplet that runs the default bootstrap
//	egress-static-ip:true              a Droplet of a Static proxy
const (
	tagProbePort = "egress-proxy-port"
	tagStaticIP  = "egress-static-ip"
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

// tagsFor are the tags of the Droplet made for req: the contract's three
// and the VM side's, all in the create call.
func (p *Provider) tagsFor(req provider.CreateRequest) ([]string, error) {
	tags := []string{ManagedTag, uidTag(req.UID), DeploymentTag(p.cfg.Deployment)}
	if req.StartupScript != "" && req.CloudInit == "" {
		tags = append(tags, Tag(tagProbePort, strconv.Itoa(int(req.Port))), Tag(vmside.LabelStatusID, statusID(req)))
	}
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
