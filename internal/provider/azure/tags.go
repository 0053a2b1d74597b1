package azure

import (
	"fmt"
	"strconv"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"

	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/provider/vmside"
	"github.com/egress-proxies/egress/internal/vmstatus"
)

// Azure's tags are names and values (a name of at most 512 characters
// without <>%&\?/, a value of at most 256), so each of the contract's
// labels is a tag as it is: proxy-operator-managed, proxy-operator-uid,
// egress-deployment, on the VM, its NIC and its public IP, set in the
// PUT that makes each. The VM carries the VM side's too:
//
//	egress-proxy-port     the port it answers the status request on
//	egress-status-id      vmside.LabelStatusID
//	egress-status-request what the status id is derived from (the create's
//	                      request id), so Reconfigure renders the VM's
//	                      user-data for the same id, or a new owner's
//	egress-static-ip      true on a Static proxy's VM and IP
//	egress-config         the digest of the last Reconfigure's request,
//	                      so the same request again writes nothing
//
// and the NIC and IP egress-created, their creation time (the VM has its
// own, timeCreated), which the collector's grace period reads.
const (
	tagProbePort     = "egress-proxy-port"
	tagStatusRequest = "egress-status-request"
	tagStaticIP      = "egress-static-ip"
	tagConfig        = "egress-config"
	tagCreated       = "egress-created"
	// maxTagValue is Azure's limit on a tag's value.
	maxTagValue = 256
)

// labels are the contract's three tags of every resource made for req.
func (p *Provider) labels(uid string) map[string]*string {
	return map[string]*string{
		provider.LabelManaged:    to.Ptr(provider.LabelManagedYes),
		provider.LabelUID:        to.Ptr(uid),
		provider.LabelDeployment: to.Ptr(p.cfg.Deployment),
	}
}

// vmTags are the VM's tags: the labels, and the VM side's when it runs the
// default bootstrap.
func (p *Provider) vmTags(req provider.CreateRequest) (map[string]*string, error) {
	tags := p.labels(req.UID)
	if req.StartupScript != "" && req.CloudInit == "" {
		tags[tagProbePort] = to.Ptr(strconv.Itoa(int(req.Port)))
		tags[vmside.LabelStatusID] = to.Ptr(vmstatus.StatusID(req))
		tags[tagStatusRequest] = to.Ptr(statusRequest(req))
	}
	if req.StaticIP {
		tags[tagStaticIP] = to.Ptr("true")
	}
	for k, v := range tags {
		if len(*v) > maxTagValue {
			return nil, provider.NewError(provider.KindPermanent, "create", req.Name,
				fmt.Errorf("the tag %s is %d characters, over Azure's %d: the uid is too long to tag a VM with", k, len(*v), maxTagValue))
		}
	}
	return tags, nil
}

// netTags are the NIC's and the IP's tags: the labels, a Static IP's mark,
// and when they were made.
func (p *Provider) netTags(req provider.CreateRequest) map[string]*string {
	tags := p.labels(req.UID)
	tags[tagCreated] = to.Ptr(p.cfg.Now().UTC().Format(time.RFC3339))
	if req.StaticIP {
		tags[tagStaticIP] = to.Ptr("true")
	}
	return tags
}

// statusRequest is what vmstatus.StatusID derives a VM's status id from,
// beside the uid: the create's request id, or its name when it has none.
func statusRequest(req provider.CreateRequest) string {
	if req.RequestID != "" {
		return req.RequestID
	}
	return req.Name
}

// tag is a tag's value, "" when absent.
func tag(tags map[string]*string, name string) string {
	if v, ok := tags[name]; ok && v != nil {
		return *v
	}
	return ""
}

// listed reports whether a resource with these tags is ListByTag's:
// managed, and of this deployment or of none.
func (p *Provider) listed(tags map[string]*string) bool {
	d, labelled := tags[provider.LabelDeployment]
	return tag(tags, provider.LabelManaged) == provider.LabelManagedYes && (!labelled || (d != nil && *d == p.cfg.Deployment))
}
