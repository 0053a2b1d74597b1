// Package vmside holds what a provider of a cloud whose VMs boot by
// cloud-init needs of the VM side (the bootstrap and the proxy engine),
// as two narrow interfaces: a Renderer of a VM's user-data and a Prober
// of its readiness. The hetzner and aws providers consume them; the VM
// side implements them, and the composition root (internal/app) enables
// such a provider only once it has both.
//
// They exist because those clouds have what Google's guest attributes
// and call-home topic give the gcp provider in neither form: the
// control plane asks the VM, through the proxy port, on a host name no
// one else may ask for, with a credential derived from a control-plane
// key, the uid and the VM's own status id (LabelStatusID), of which the
// VM's configuration holds only a salted hash; the VM signs its answer
// with a key of its own (package vmstatus). So nothing in a VM's
// user-data or metadata is a credential that opens another VM, and no
// one but the VM can answer for it.
package vmside

import (
	"context"
	"errors"
	"fmt"

	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/vm/vmconfig"
	"github.com/egress-proxies/egress/internal/vmstatus"
)

// LabelStatusID is the label (Hetzner) or tag (EC2) that holds a VM's
// status id (vmstatus.StatusID of its create request), set in the call
// that makes the VM, from which the control plane derives the VM's own
// status credential and sign key. A VM without it (made before per-VM
// credentials) is not asked.
const LabelStatusID = "egress-status-id"

// Prober asks a VM whether its proxy serves.
type Prober interface {
	// Probe asks the proxy at ip:port, serving the proxy of uid, with
	// status id id, for its status. An error means no answer (the VM
	// still boots, its proxy does not listen yet, or the answer is not
	// signed by the VM of that id): the VM is Provisioning. An answer is
	// its Status.
	Probe(ctx context.Context, ip string, port int32, uid, id string) (Status, error)
}

// Status is what a VM's proxy says of itself: the generation it serves,
// whether it proved it serves it, why not, and its traffic. It is
// vmstatus's, whose Prober asks for it.
type Status = vmstatus.Status

// Renderer makes the user-data of a VM that runs the default bootstrap
// (req.StartupScript and req.Engine set): what cloud-init runs on the
// cloud's Debian images, holding nothing a reader of the VM's user-data
// could use (the cloud's API returns it to anyone allowed to describe
// the VM, and the VM's metadata service to any process on it).
type Renderer interface {
	UserData(req provider.CreateRequest) (string, error)
}

// RendererFunc is a function as a Renderer.
type RendererFunc func(req provider.CreateRequest) (string, error)

// UserData calls f.
func (f RendererFunc) UserData(req provider.CreateRequest) (string, error) { return f(req) }

// ProberFunc is a function as a Prober.
type ProberFunc func(ctx context.Context, ip string, port int32, uid, id string) (Status, error)

// Probe calls f.
func (f ProberFunc) Probe(ctx context.Context, ip string, port int32, uid, id string) (Status, error) {
	return f(ctx, ip, port, uid, id)
}

// Observe asks the VM out describes, Running and on its proxy port,
// whether its proxy serves, and records the answer in out: no answer
// yet is Provisioning (unanswered says why, for the caller's log), an
// answer that it cannot serve is Provisioning with its reason
// (BootError), and one that it serves stays Running, with the
// generation it serves, and, when it refused a later one, that
// generation (RefusedGeneration) with its reason. Any answer carries the
// traffic its proxy carried. A cancelled context is an error of its own:
// nothing was learnt.
//
// The VM is asked with its status id (out.StatusID, its LabelStatusID).
// instance is the cloud's id of the VM out describes, where its VMs can
// tell theirs (EC2's, from IMDS), or "". An answer naming another
// instance is no answer: the address still reaches another VM (a static
// address not yet moved from the VM this one replaces). Since each VM
// has its own status credential and sign key, such a VM refuses the
// request or its answer fails the signature already; this check stays
// as a second opinion. An answer naming none is taken: a VM that could
// not read its identity still serves.
func Observe(ctx context.Context, p Prober, out *provider.Instance, port int32, instance string) (unanswered, err error) {
	st, perr := p.Probe(ctx, out.IP, port, out.UID, out.StatusID)
	switch {
	case ctx.Err() != nil:
		return nil, provider.NewError(provider.KindTransient, "get", out.ID, fmt.Errorf("probing %s:%d: %w", out.IP, port, ctx.Err()))
	case perr != nil:
		out.State = provider.StateProvisioning
		return perr, nil
	case instance != "" && st.Instance != "" && st.Instance != instance:
		out.State = provider.StateProvisioning
		return fmt.Errorf("%s:%d answered as instance %q, not %q", out.IP, port, st.Instance, instance), nil
	case !st.Ready:
		out.State, out.BootError, out.Traffic = provider.StateProvisioning, st.Error, st.Traffic
	default:
		out.Generation, out.Traffic = st.Generation, st.Traffic
		// A VM whose user data changes in place (Azure's) that refused a
		// change serves the generation before, and says which it
		// refused and why, as a GCE VM says it in egress/error.
		if refused, ok := vmconfig.RefusedGeneration(st.Error); ok && refused > st.Generation {
			out.RefusedGeneration, out.BootError = refused, st.Error
		}
	}
	return nil, nil
}

// Stopper is a Prober that can also tell a VM to stop carrying new
// connections at its namespace's budget, or to carry them again, through
// its status door (vmconfig.TrafficOrder). *vmstatus.Prober is one.
type Stopper interface {
	StopTraffic(ctx context.Context, ip string, port int32, uid, id string, stop *vmconfig.TrafficStop) (Status, error)
}

// StopTraffic tells the VM providerID names to serve stop (nil: carry
// again), for a provider's provider.TrafficStopper, whose Get reads the
// VM first: running, its address, status port and id. A VM whose door is
// not open (not running, or no default bootstrap) is a transient error,
// as is one that does not answer: the caller asks again later. A prober
// that tells no stop (a simulation's) is a permanent one.
func StopTraffic(ctx context.Context, p Prober, get func(context.Context, string) (*provider.Instance, error), providerID string, stop *vmconfig.TrafficStop) error {
	s, ok := p.(Stopper)
	if !ok {
		return provider.NewError(provider.KindPermanent, "stop traffic", providerID, errors.New("this provider's prober tells its VMs no traffic order"))
	}
	inst, err := get(ctx, providerID)
	if err != nil {
		return err
	}
	if inst.State != provider.StateRunning || inst.IP == "" || inst.StatusPort == 0 {
		return provider.NewError(provider.KindTransient, "stop traffic", inst.ID,
			fmt.Errorf("the VM is %s on %q port %d: its status door is not open", inst.State, inst.IP, inst.StatusPort))
	}
	if _, err := s.StopTraffic(ctx, inst.IP, inst.StatusPort, inst.UID, inst.StatusID, stop); err != nil {
		return provider.NewError(provider.KindTransient, "stop traffic", inst.ID, err)
	}
	return nil
}
