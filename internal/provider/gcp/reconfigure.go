package gcp

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"

	"cloud.google.com/go/compute/apiv1/computepb"
	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/vm/vmconfig"
	"google.golang.org/api/googleapi"
	"google.golang.org/protobuf/proto"
)

// reconfigureAttempts bounds Reconfigure's read-and-write rounds: each
// lost one means another client changed the VM's metadata or labels
// between the read and the write. Terraform's Google provider retries a
// fingerprint conflict 10 times; a proxy VM has no other writer but a
// person with gcloud, so a few suffice, and the reconciler tries again on
// the next run after a transient error anyway.
const reconfigureAttempts = 4

// Reconfigure hands the VM a new engine configuration and owner: the
// metadata items the startup script and the VM's agent read
// (vmconfig.KeyConfig, and, with a call-home topic, KeyNamespace, KeyName
// and KeyUID), through instances.setMetadata, and LabelUID through
// instances.setLabels; every other item and label is kept as read.
//
// Both calls carry the fingerprint of the read they follow, so a change
// made by someone else in between is never overwritten: Compute answers
// 412 conditionNotMet and Reconfigure reads again (reconfigureAttempts).
// What already matches is not written, so a repeat of the same request
// makes only the instances.get, and a crash between the two calls is
// finished by the next one.
//
// The labels go first: once the VM serves the new configuration it calls
// home naming req.UID, and the run that call brings must find the VM
// labelled with it; Compute runs an instance's operations in turn.
//
// It waits for neither operation, as Create and Delete do not: the VM's
// report of the new generation (Get's Instance.Generation, and its
// call-home) is what says the change took, and a reconfiguration that
// never does is the reconciler's timeout to handle (it replaces the VM).
// Waiting would hold the reconcile function for the operation's seconds
// and spend zoneOperations calls, to learn less than the VM tells.
func (p *Provider) Reconfigure(ctx context.Context, providerID string, req provider.ReconfigureRequest) error {
	id, err := parseID(providerID)
	if err != nil {
		return err
	}
	if id.address {
		return provider.NewError(provider.KindPermanent, "reconfigure", providerID, errors.New("an address is no VM to reconfigure"))
	}
	var engine string
	if req.Engine != nil {
		// Marshalled as create.go marshals it: the agent compares values.
		engine = engineJSON(req.Engine)
	}
	for range reconfigureAttempts {
		inst, err := p.c.Instances.Get(ctx, &computepb.GetInstanceRequest{Project: id.project, Zone: id.scope, Instance: id.name})
		if err != nil {
			return p.wrap("reconfigure", providerID, err)
		}
		if labels, changed := relabelled(inst.GetLabels(), req.UID); changed {
			_, err := p.c.Instances.SetLabels(ctx, &computepb.SetLabelsInstanceRequest{
				Project: id.project, Zone: id.scope, Instance: id.name,
				InstancesSetLabelsRequestResource: &computepb.InstancesSetLabelsRequest{
					LabelFingerprint: inst.LabelFingerprint, Labels: labels,
				},
			})
			if conflict(err) {
				continue
			}
			if err != nil {
				return p.wrap("reconfigure", providerID, err)
			}
		}
		if items, changed := p.reconfiguredItems(inst.GetMetadata().GetItems(), req, engine); changed {
			_, err := p.c.Instances.SetMetadata(ctx, &computepb.SetMetadataInstanceRequest{
				Project: id.project, Zone: id.scope, Instance: id.name,
				MetadataResource: &computepb.Metadata{Fingerprint: inst.GetMetadata().Fingerprint, Items: items},
			})
			if conflict(err) {
				continue
			}
			if err != nil {
				return p.wrap("reconfigure", providerID, err)
			}
		}
		return nil
	}
	return provider.NewError(provider.KindTransient, "reconfigure", providerID,
		fmt.Errorf("the VM's metadata or labels changed under each of %d attempts (412 conditionNotMet): another client is writing them", reconfigureAttempts))
}

// conflict reports whether Compute refused a write for its fingerprint:
// 412 conditionNotMet, "Supplied fingerprint does not match current
// metadata fingerprint" (instances/setMetadata, the fingerprint field).
func conflict(err error) bool {
	var gerr *googleapi.Error
	return errors.As(err, &gerr) && gerr.Code == http.StatusPreconditionFailed
}

// relabelled is labels with LabelUID set to uid, and whether that changes
// them.
func relabelled(labels map[string]string, uid string) (map[string]string, bool) {
	if labels[provider.LabelUID] == uid {
		return labels, false
	}
	out := maps.Clone(labels)
	if out == nil {
		out = map[string]string{}
	}
	out[provider.LabelUID] = uid
	return out, true
}

// reconfiguredItems is the VM's metadata with the request's items set: the
// engine's configuration, and whose proxy it serves for the call-home
// (added when the provider has a call-home topic, as create.go adds them,
// and replaced wherever the VM has them). Items keep their order; new ones
// go last. A warm pool's item (vmconfig.KeyPool) goes: the VM serves the
// request's proxy now, and its call-home names that proxy.
func (p *Provider) reconfiguredItems(items []*computepb.Items, req provider.ReconfigureRequest, engine string) ([]*computepb.Items, bool) {
	want := map[string]string{}
	var order []string
	set := func(key, value string) {
		want[key] = value
		order = append(order, key)
	}
	if req.Engine != nil {
		set(vmconfig.KeyConfig, engine)
	}
	set(vmconfig.KeyNamespace, req.Namespace)
	set(vmconfig.KeyName, req.ProxyName)
	set(vmconfig.KeyUID, req.UID)

	out := make([]*computepb.Items, 0, len(items)+len(want))
	changed := false
	seen := map[string]bool{}
	for _, it := range items {
		k := it.GetKey()
		if k == vmconfig.KeyPool {
			changed = true
			continue
		}
		v, ok := want[k]
		seen[k] = true
		if ok && it.GetValue() != v {
			changed = true
			it = &computepb.Items{Key: proto.String(k), Value: proto.String(v)}
		}
		out = append(out, it)
	}
	for _, k := range order {
		if seen[k] {
			continue
		}
		if k != vmconfig.KeyConfig && p.cfg.CallHomeTopic == "" {
			// No call-home: nothing on the VM reads whose proxy it is.
			continue
		}
		changed = true
		out = append(out, &computepb.Items{Key: proto.String(k), Value: proto.String(want[k])})
	}
	return out, changed
}
