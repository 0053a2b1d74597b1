// Package gcp is the Compute Engine provider (type "gcp"): each proxy is one
// VM, created through the Compute REST API with Google's Go client.
//
// providerIDs are gce://PROJECT/ZONE/NAME. Create does not wait for the
// insert operation: the reconciler polls Get, which is the contract. Every
// error is classified into the provider's kinds (not found, already exists,
// quota, rate limited, capacity, transient, permanent) from the
// *googleapi.Error the client returns, whose errors[].reason carries
// Compute's reason.
package gcp

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"time"

	compute "cloud.google.com/go/compute/apiv1"
	"cloud.google.com/go/compute/apiv1/computepb"
	"github.com/google/uuid"
	"google.golang.org/api/googleapi"
	"google.golang.org/api/iterator"
	"google.golang.org/protobuf/proto"

	"github.com/egress-proxies/egress/internal/bootstrap"
	"github.com/egress-proxies/egress/internal/provider"
)

// Type is the registry type of this provider.
const Type = "gcp"

// Defaults of Config.
const (
	DefaultNetwork     = "default"
	DefaultNetworkTag  = "egress-proxy"
	DefaultMachineType = "e2-micro"
	DefaultImage       = "projects/debian-cloud/global/images/family/debian-12"
	DefaultDiskSizeGB  = 10
)

// DefaultScopes lets a proxy VM write its logs and metrics and call home
// on Pub/Sub, where its account's only role is publisher on the reconcile
// topic (deploy/terraform).
var DefaultScopes = []string{
	"https://www.googleapis.com/auth/logging.write",
	"https://www.googleapis.com/auth/monitoring.write",
	"https://www.googleapis.com/auth/pubsub",
}

// Config is the provider's configuration (internal/app reads it from GCP_*
// variables).
type Config struct {
	// Project is where the VMs are made.
	Project string
	// Network and Subnetwork place the VM's interface; Subnetwork may be
	// empty for an auto-mode network.
	Network, Subnetwork string
	// NetworkTag is the tag the firewall rule opens the proxy port for.
	NetworkTag string
	// ServiceAccount is the VMs' own service account email; empty gives
	// them none.
	ServiceAccount string
	// Scopes are the OAuth scopes of that service account.
	Scopes []string
	// ProbeTarget is the host:port a VM's self-test CONNECTs to through its
	// proxy before it says it serves; empty leaves the script's default,
	// bootstrap.DefaultProbeTarget.
	ProbeTarget string
	// CallHomeTopic is the topic a VM publishes to once it serves,
	// projects/P/topics/T; empty, VMs do not call home.
	CallHomeTopic string
	// PubSubEndpoint is the Pub/Sub REST API the VMs publish to; empty is
	// Google's. Tests point it at a stand-in.
	PubSubEndpoint string
}

// Provider is the Compute Engine provider.
type Provider struct {
	client *compute.InstancesClient
	cfg    Config
}

// New returns a provider over an instances client (compute.NewInstancesRESTClient).
func New(client *compute.InstancesClient, cfg Config) (*Provider, error) {
	if cfg.Project == "" {
		return nil, errors.New("gcp provider: no project")
	}
	if cfg.Network == "" {
		cfg.Network = DefaultNetwork
	}
	if cfg.NetworkTag == "" {
		cfg.NetworkTag = DefaultNetworkTag
	}
	if cfg.Scopes == nil {
		cfg.Scopes = DefaultScopes
	}
	return &Provider{client: client, cfg: cfg}, nil
}

var (
	_ provider.Provider      = (*Provider)(nil)
	_ provider.ConsoleReader = (*Provider)(nil)
)

// ID is the providerID of an instance.
func ID(project, zone, name string) string { return "gce://" + project + "/" + zone + "/" + name }

var (
	projectRE = regexp.MustCompile(`^[a-z][-a-z0-9.:]{4,61}[a-z0-9]$`)
	zoneRE    = regexp.MustCompile(`^[a-z]+(-[a-z]+)+[0-9]+-[a-z]$`)
	nameRE    = regexp.MustCompile(`^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$`)
)

// ParseID splits a providerID strictly: gce://PROJECT/ZONE/NAME, each part
// of its GCE form.
func ParseID(id string) (project, zone, name string, err error) {
	rest, ok := strings.CutPrefix(id, "gce://")
	parts := strings.Split(rest, "/")
	if !ok || len(parts) != 3 || !projectRE.MatchString(parts[0]) || !zoneRE.MatchString(parts[1]) || !nameRE.MatchString(parts[2]) {
		return "", "", "", provider.NewError(provider.KindPermanent, "parse providerID", id,
			errors.New("not of the form gce://PROJECT/ZONE/NAME"))
	}
	return parts[0], parts[1], parts[2], nil
}

// RequestID is the insert's request id: a UUID derived from the uid and the
// name, so a retried insert is recognised by Compute as the same request.
func RequestID(uid, name string) string {
	return uuid.NewSHA1(requestIDSpace, []byte(uid+"/"+name)).String()
}

var requestIDSpace = uuid.MustParse("5b0e4f5c-2b8e-4c1e-9d39-7f1b8d6a3e21")

// Create inserts the VM and returns without waiting for it. An instance of
// that name that exists already is adopted when its uid label is the
// request's, and a conflict otherwise.
func (p *Provider) Create(ctx context.Context, req provider.CreateRequest) (string, error) {
	zone := req.Placement.Zone
	if zone == "" || !zoneRE.MatchString(zone) || !nameRE.MatchString(req.Name) {
		return "", provider.NewError(provider.KindPermanent, "create", req.Name, fmt.Errorf("zone %q and name %q must be GCE names", zone, req.Name))
	}
	id := ID(p.cfg.Project, zone, req.Name)
	_, err := p.client.Insert(ctx, &computepb.InsertInstanceRequest{
		Project:          p.cfg.Project,
		Zone:             zone,
		RequestId:        proto.String(RequestID(req.UID, req.Name)),
		InstanceResource: p.instance(req),
	})
	if err == nil {
		return id, nil
	}
	if classify(err) != provider.KindAlreadyExists {
		return "", wrap("create", id, err)
	}
	inst, gerr := p.Get(ctx, id)
	if gerr != nil {
		return "", gerr
	}
	if inst.UID != req.UID {
		return "", provider.NewError(provider.KindAlreadyExists, "create", id,
			fmt.Errorf("instance exists with uid label %q, not %q: it belongs to something else", inst.UID, req.UID))
	}
	return id, nil
}

// instance is the VM a request asks for.
func (p *Provider) instance(req provider.CreateRequest) *computepb.Instance {
	pl := req.Placement
	machineType := pl.MachineType
	if machineType == "" {
		machineType = DefaultMachineType
	}
	image := pl.Image
	if image == "" {
		image = DefaultImage
	}
	nic := &computepb.NetworkInterface{
		Network:       proto.String("global/networks/" + p.cfg.Network),
		AccessConfigs: []*computepb.AccessConfig{{Name: proto.String("External NAT"), Type: proto.String("ONE_TO_ONE_NAT")}},
	}
	if p.cfg.Subnetwork != "" {
		nic.Subnetwork = proto.String("regions/" + pl.Region + "/subnetworks/" + p.cfg.Subnetwork)
	}
	inst := &computepb.Instance{
		Name:        proto.String(req.Name),
		Description: proto.String(fmt.Sprintf("Egress proxy namespaces/%s/proxies/%s", req.Namespace, req.ProxyName)),
		MachineType: proto.String("zones/" + pl.Zone + "/machineTypes/" + machineType),
		Labels:      map[string]string{provider.LabelManaged: provider.LabelManagedYes, provider.LabelUID: req.UID},
		Tags:        &computepb.Tags{Items: []string{p.cfg.NetworkTag}},
		Metadata:    p.metadata(req),
		Disks: []*computepb.AttachedDisk{{
			Boot: proto.Bool(true), AutoDelete: proto.Bool(true), Type: proto.String("PERSISTENT"),
			InitializeParams: &computepb.AttachedDiskInitializeParams{
				SourceImage: proto.String(image), DiskSizeGb: proto.Int64(DefaultDiskSizeGB),
			},
		}},
		NetworkInterfaces: []*computepb.NetworkInterface{nic},
	}
	if p.cfg.ServiceAccount != "" {
		inst.ServiceAccounts = []*computepb.ServiceAccount{{Email: proto.String(p.cfg.ServiceAccount), Scopes: p.cfg.Scopes}}
	}
	return inst
}

// metadata is what the VM boots with. The default bootstrap goes as
// startup-script, which the guest agent of every Google public Linux image
// runs at every boot (those images have no cloud-init), with the attributes
// it reads: its probe target and what it says when it calls home. A spec's
// own cloud-init goes as user-data, for images that run cloud-init.
func (p *Provider) metadata(req provider.CreateRequest) *computepb.Metadata {
	md := &computepb.Metadata{}
	add := func(key, value string) {
		if value != "" {
			md.Items = append(md.Items, &computepb.Items{Key: proto.String(key), Value: proto.String(value)})
		}
	}
	if req.StartupScript != "" {
		add(bootstrap.KeyStartupScript, req.StartupScript)
		add(bootstrap.KeyGuestAttributes, "TRUE")
		add(bootstrap.KeyProbeTarget, p.cfg.ProbeTarget)
		if p.cfg.CallHomeTopic != "" {
			add(bootstrap.KeyCallHomeTopic, p.cfg.CallHomeTopic)
			add(bootstrap.KeyPubSubEndpoint, p.cfg.PubSubEndpoint)
			add(bootstrap.KeyNamespace, req.Namespace)
			add(bootstrap.KeyName, req.ProxyName)
			add(bootstrap.KeyUID, req.UID)
		}
	}
	add("user-data", req.CloudInit)
	return md
}

// Get reads the VM.
func (p *Provider) Get(ctx context.Context, providerID string) (*provider.Instance, error) {
	project, zone, name, err := ParseID(providerID)
	if err != nil {
		return nil, err
	}
	inst, err := p.client.Get(ctx, &computepb.GetInstanceRequest{Project: project, Zone: zone, Instance: name})
	if err != nil {
		return nil, wrap("get", providerID, err)
	}
	out := convert(providerID, inst)
	if out.State == provider.StateRunning && bootstrapped(inst) {
		// A VM that boots the default bootstrap runs before it serves: it
		// is Running only once its self-test has said so.
		if err := p.readiness(ctx, project, zone, name, &out); err != nil {
			return nil, wrap("get", providerID, err)
		}
	}
	return &out, nil
}

// bootstrapped reports whether the VM was given the default bootstrap, and
// so reports its readiness in guest attributes.
func bootstrapped(inst *computepb.Instance) bool {
	for _, it := range inst.GetMetadata().GetItems() {
		if it.GetKey() == bootstrap.KeyGuestAttributes && strings.EqualFold(it.GetValue(), "TRUE") {
			return true
		}
	}
	return false
}

// readiness reads the guest attributes the startup script writes: with
// egress/ready the VM stays Running; otherwise it is Provisioning, with the
// reason of egress/error if the script gave one. The script clears both at
// the start of every boot, so a ready beside a stale error means the clear
// failed, not that the proxy does.
func (p *Provider) readiness(ctx context.Context, project, zone, name string, out *provider.Instance) error {
	attrs, err := p.client.GetGuestAttributes(ctx, &computepb.GetGuestAttributesInstanceRequest{
		Project: project, Zone: zone, Instance: name, QueryPath: proto.String(bootstrap.GuestNamespace + "/"),
	})
	values := map[string]string{}
	switch {
	case classify(err) == provider.KindNotFound:
		// Compute answers 404 while nothing is written under the path;
		// the instance itself was just read, so this is no lost VM.
	case err != nil:
		return err
	default:
		for _, it := range attrs.GetQueryValue().GetItems() {
			if it.GetNamespace() == bootstrap.GuestNamespace {
				values[it.GetKey()] = it.GetValue()
			}
		}
	}
	if _, ok := values[bootstrap.GuestReady]; ok {
		return nil
	}
	out.State = provider.StateProvisioning
	out.BootError = values[bootstrap.GuestError]
	return nil
}

// consoleBytes is how much of the end of a VM's serial console Console
// reads: enough for the last lines of a failed boot.
const consoleBytes = 8 << 10

// Console returns the end of the VM's serial console (port 1), where the
// guest agent copies the startup script's output.
func (p *Provider) Console(ctx context.Context, providerID string) (string, error) {
	project, zone, name, err := ParseID(providerID)
	if err != nil {
		return "", err
	}
	out, err := p.client.GetSerialPortOutput(ctx, &computepb.GetSerialPortOutputInstanceRequest{
		Project: project, Zone: zone, Instance: name, Port: proto.Int32(1), Start: proto.Int64(-consoleBytes),
	})
	if err != nil {
		return "", wrap("console", providerID, err)
	}
	return out.GetContents(), nil
}

// Delete deletes the VM. A VM already gone is success; one already on its
// way out is left alone, since every delete call spends mutation quota.
func (p *Provider) Delete(ctx context.Context, providerID string) error {
	project, zone, name, err := ParseID(providerID)
	if err != nil {
		return err
	}
	inst, err := p.client.Get(ctx, &computepb.GetInstanceRequest{Project: project, Zone: zone, Instance: name})
	switch {
	case classify(err) == provider.KindNotFound:
		return nil
	case err != nil:
		return wrap("delete", providerID, err)
	}
	switch inst.GetStatus() {
	case "STOPPING", "DEPROVISIONING":
		return nil
	}
	_, err = p.client.Delete(ctx, &computepb.DeleteInstanceRequest{Project: project, Zone: zone, Instance: name})
	if classify(err) == provider.KindNotFound {
		return nil
	}
	return wrap("delete", providerID, err)
}

// ListByTag returns every managed instance of the project in one aggregated
// list over all zones, filtered on the managed label and checked again
// here. A zone that could not be read fails the list: an instance missing
// from it must not look deleted.
func (p *Provider) ListByTag(ctx context.Context) ([]provider.Instance, error) {
	it := p.client.AggregatedList(ctx, &computepb.AggregatedListInstancesRequest{
		Project: p.cfg.Project,
		Filter:  proto.String("labels." + provider.LabelManaged + "=" + provider.LabelManagedYes),
	})
	var out []provider.Instance
	var unreachable []string
	for {
		pair, err := it.Next()
		if errors.Is(err, iterator.Done) {
			break
		}
		if err != nil {
			return nil, wrap("list", p.cfg.Project, err)
		}
		scope := pair.Key
		if w := pair.Value.GetWarning(); w.GetCode() == "UNREACHABLE" {
			unreachable = append(unreachable, scope)
		}
		zone := strings.TrimPrefix(scope, "zones/")
		for _, inst := range pair.Value.GetInstances() {
			if inst.GetLabels()[provider.LabelManaged] != provider.LabelManagedYes {
				continue
			}
			out = append(out, convert(ID(p.cfg.Project, zone, inst.GetName()), inst))
		}
	}
	// The iterator can end early on a cancelled context without saying
	// so; a listing cut short must not pass for a complete one.
	if err := ctx.Err(); err != nil {
		return nil, provider.NewError(provider.KindTransient, "list", p.cfg.Project, err)
	}
	if resp, ok := it.Response.(*computepb.InstanceAggregatedList); ok {
		for _, u := range resp.GetUnreachables() {
			if !contains(unreachable, u) {
				unreachable = append(unreachable, u)
			}
		}
	}
	if len(unreachable) > 0 {
		return nil, provider.NewError(provider.KindTransient, "list", p.cfg.Project,
			fmt.Errorf("unreachable: %s; the listing would be incomplete", strings.Join(unreachable, ", ")))
	}
	return out, nil
}

func contains(list []string, v string) bool {
	for _, s := range list {
		if s == v {
			return true
		}
	}
	return false
}

// convert maps a Compute instance onto the provider's view.
func convert(id string, inst *computepb.Instance) provider.Instance {
	out := provider.Instance{ID: id, State: State(inst.GetStatus()), UID: inst.GetLabels()[provider.LabelUID]}
	if nics := inst.GetNetworkInterfaces(); len(nics) > 0 {
		if acs := nics[0].GetAccessConfigs(); len(acs) > 0 {
			out.IP = acs[0].GetNatIP()
		}
	}
	if t, err := time.Parse(time.RFC3339, inst.GetCreationTimestamp()); err == nil {
		out.CreatedAt = t
	}
	return out
}

// State maps a Compute instance status onto the provider's four states.
// TERMINATED is a stopped VM (it can be started again), not a deleted one.
func State(status string) provider.InstanceState {
	switch status {
	case "RUNNING":
		return provider.StateRunning
	case "STOPPING", "PENDING_STOP", "STOPPED", "SUSPENDING", "SUSPENDED", "TERMINATED":
		return provider.StateStopped
	case "DEPROVISIONING":
		return provider.StateTerminated
	default: // PROVISIONING, STAGING, PENDING, REPAIRING and any new one
		return provider.StateProvisioning
	}
}

// capacityReasons are Compute's ways of saying the zone has no room.
var capacityReasons = map[string]bool{
	"ZONE_RESOURCE_POOL_EXHAUSTED":              true,
	"ZONE_RESOURCE_POOL_EXHAUSTED_WITH_DETAILS": true,
	"resourcePoolExhausted":                     true,
	"RESOURCE_POOL_EXHAUSTED":                   true,
}

// classify reads the kind of a Compute error.
func classify(err error) provider.Kind {
	if err == nil {
		return ""
	}
	var gerr *googleapi.Error
	if !errors.As(err, &gerr) {
		// No answer from Compute (a timeout, a reset): worth another try.
		return provider.KindTransient
	}
	reasons := map[string]bool{}
	for _, e := range gerr.Errors {
		reasons[e.Reason] = true
		for r := range capacityReasons {
			if strings.Contains(e.Message, r) {
				reasons[r] = true
			}
		}
	}
	for r := range capacityReasons {
		if reasons[r] || strings.Contains(gerr.Message, r) {
			return provider.KindCapacity
		}
	}
	switch {
	case gerr.Code == http.StatusNotFound:
		return provider.KindNotFound
	case gerr.Code == http.StatusConflict && (reasons["alreadyExists"] || len(reasons) == 0):
		return provider.KindAlreadyExists
	case gerr.Code == http.StatusTooManyRequests, reasons["rateLimitExceeded"], reasons["userRateLimitExceeded"]:
		return provider.KindRateLimited
	case reasons["quotaExceeded"], reasons["QUOTA_EXCEEDED"]:
		return provider.KindQuota
	case gerr.Code >= 500:
		return provider.KindTransient
	case gerr.Code == http.StatusConflict:
		// Another operation on the resource is in flight: try again.
		return provider.KindTransient
	default:
		return provider.KindPermanent
	}
}

func wrap(op, target string, err error) error {
	if err == nil {
		return nil
	}
	kind := classify(err)
	if kind == provider.KindNotFound {
		return provider.NewError(kind, op, target, fmt.Errorf("%w: %w", provider.ErrNotFound, err))
	}
	return provider.NewError(kind, op, target, err)
}
