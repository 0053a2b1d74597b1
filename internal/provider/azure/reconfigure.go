package azure

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"strconv"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/compute/armcompute/v8"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v7"

	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/provider/vmside"
	"github.com/egress-proxies/egress/internal/vmstatus"
)

// Reconfigure hands the VM a new configuration and owner in one PATCH of
// the VM (virtualMachines/write): its userData, a new rendering of the
// VM's user-data for req (the Renderer's, as at create), which the VM's
// agent polls through IMDS and applies without a reboot (the plugin's
// Boot.WatchUserData); and its tags, LabelUID set to req.UID (on its NIC
// and public IP too, first: retagNetwork) and the
// status id to the one the new rendering holds. The status id is derived
// from the uid and the create's request id, which the VM keeps in a tag
// (egress-status-request): the same owner keeps its id, a new owner (a
// warm pool's VM claimed) gets its own, and the control plane reads it
// from the tag as for any VM. customData, which cloud-init read at the
// first boot, cannot change after a create and is left.
//
// It is idempotent: the VM keeps the digest of the last request it was
// given (egress-config), and the same request again writes nothing (a
// rendering is not byte-for-byte the same twice: the status credential's
// hash is salted). It does not wait for the PATCH's operation: the VM's
// report of the new generation (Get's Instance.Generation) is what says
// the change took. A VM gone, or being deleted, is ErrNotFound.
func (p *Provider) Reconfigure(ctx context.Context, providerID string, req provider.ReconfigureRequest) error {
	id, err := p.parseID(providerID)
	if err != nil {
		return err
	}
	if id.address {
		return provider.NewError(provider.KindPermanent, "reconfigure", providerID, errors.New("a public IP is no VM to reconfigure"))
	}
	res, err := p.c.VMs.Get(ctx, id.group, id.name, nil)
	if err != nil {
		return p.wrap("reconfigure", providerID, err)
	}
	vm := res.VirtualMachine
	if provisioning(&vm) == "Deleting" {
		return provider.NewError(provider.KindNotFound, "reconfigure", providerID, fmt.Errorf("%w: the VM is being deleted", provider.ErrNotFound))
	}
	port, err := strconv.ParseInt(tag(vm.Tags, tagProbePort), 10, 32)
	if err != nil || port <= 0 {
		return provider.NewError(provider.KindPermanent, "reconfigure", providerID,
			errors.New("the VM runs a spec's own cloud-init, not the default bootstrap: nothing on it reads a new configuration"))
	}
	digest := configDigest(req)
	if tag(vm.Tags, tagConfig) == digest && tag(vm.Tags, provider.LabelUID) == req.UID {
		p.cfg.Log.Debug("azure vm already has this configuration", slog.String("providerID", providerID))
		return nil
	}
	render := provider.CreateRequest{
		Name: id.name, UID: req.UID, Namespace: req.Namespace, ProxyName: req.ProxyName,
		Engine: req.Engine, Port: int32(port), StaticIP: tag(vm.Tags, tagStaticIP) == "true",
		StartupScript: "reconfigure", RequestID: tag(vm.Tags, tagStatusRequest),
	}
	ud, err := p.cfg.Renderer.UserData(render)
	if err != nil {
		return provider.NewError(provider.KindPermanent, "reconfigure", providerID, fmt.Errorf("rendering the user-data: %w", err))
	}
	if len(ud) > MaxUserDataBytes {
		return provider.NewError(provider.KindPermanent, "reconfigure", providerID,
			fmt.Errorf("the user-data is %d bytes, over Azure's limit of %d (64 KiB once base64-encoded)", len(ud), MaxUserDataBytes))
	}
	if tag(vm.Tags, provider.LabelUID) != req.UID {
		if err := p.retagNetwork(ctx, providerID, id, req.UID); err != nil {
			return err
		}
	}
	tags := maps.Clone(vm.Tags)
	if tags == nil {
		tags = map[string]*string{}
	}
	tags[provider.LabelUID] = to.Ptr(req.UID)
	tags[vmside.LabelStatusID] = to.Ptr(vmstatus.StatusID(render))
	tags[tagStatusRequest] = to.Ptr(statusRequest(render))
	tags[tagConfig] = to.Ptr(digest)
	update := armcompute.VirtualMachineUpdate{
		Tags:       tags,
		Properties: &armcompute.VirtualMachineProperties{UserData: to.Ptr(base64.StdEncoding.EncodeToString([]byte(ud)))},
	}
	// Not followed, and its token not kept: a later Reconfigure is
	// another PATCH, never the resumption of this one.
	if _, err := p.c.VMs.BeginUpdate(ctx, id.group, id.name, update, nil); err != nil {
		return p.wrap("reconfigure", providerID, err)
	}
	gen := int64(0)
	if req.Engine != nil {
		gen = req.Engine.Generation
	}
	p.cfg.Log.Info("azure vm user data rewritten", slog.String("providerID", providerID), slog.String("uid", req.UID), slog.Int64("generation", gen))
	return nil
}

// retagNetwork sets LabelUID on the VM's NIC and public IP to uid, before
// the VM's (a crash between leaves the VM with its old uid, and the
// reconciler's next Reconfigure does all again): they are the new owner's
// from now on, so the collector judges what a crash leaves of them (a
// residue, a Static IP no VM holds) by the owner that lives.
func (p *Provider) retagNetwork(ctx context.Context, providerID string, id parsed, uid string) error {
	nic, err := p.c.NICs.Get(ctx, id.group, nicName(id.name), nil)
	switch {
	case notFound(err):
	case err != nil:
		return p.wrap("reconfigure", providerID, err)
	case p.managed(nic.Tags) && tag(nic.Tags, provider.LabelUID) != uid:
		tags := maps.Clone(nic.Tags)
		tags[provider.LabelUID] = to.Ptr(uid)
		if _, err := p.c.NICs.UpdateTags(ctx, id.group, nicName(id.name), armnetwork.TagsObject{Tags: tags}, nil); err != nil {
			return p.wrap("reconfigure", providerID, err)
		}
	}
	ip, err := p.c.IPs.Get(ctx, id.group, ipName(id.name), nil)
	switch {
	case notFound(err):
	case err != nil:
		return p.wrap("reconfigure", providerID, err)
	case p.managed(ip.Tags) && tag(ip.Tags, provider.LabelUID) != uid:
		tags := maps.Clone(ip.Tags)
		tags[provider.LabelUID] = to.Ptr(uid)
		if _, err := p.c.IPs.UpdateTags(ctx, id.group, ipName(id.name), armnetwork.TagsObject{Tags: tags}, nil); err != nil {
			return p.wrap("reconfigure", providerID, err)
		}
	}
	return nil
}

// configDigest is the digest of what a Reconfigure hands the VM, 32 hex
// digits: the owner and the engine's configuration (which holds password
// hashes, never a password; the digest is of it, never it).
func configDigest(req provider.ReconfigureRequest) string {
	engine, _ := json.Marshal(req.Engine)
	sum := sha256.Sum256([]byte(req.UID + "\x00" + req.Namespace + "\x00" + req.ProxyName + "\x00" + string(engine)))
	return hex.EncodeToString(sum[:16])
}
