package provider

import (
	"context"

	"github.com/egress-proxies/egress/internal/vm/vmconfig"
)

// Reconfigurer, an optional interface beside Provider (added to the
// original contract, which stays the four methods), is a provider that can
// change what a running VM serves without a new VM: the proxy engine's
// configuration (allowed ranges, CONNECT ports, credentials) and whose VM
// it is (LabelUID, for a VM claimed from a warm pool). The VM applies the
// new configuration by itself and reports the generation it then serves
// (Instance.Generation); Reconfigure only hands it over and returns.
//
// A provider without it gets a new VM for such a change, as before.
type Reconfigurer interface {
	// Reconfigure gives the VM providerID names req.Engine to serve and
	// sets its LabelUID to req.UID. It is idempotent: the same request
	// again changes nothing. It returns ErrNotFound when the VM is gone.
	Reconfigure(ctx context.Context, providerID string, req ReconfigureRequest) error
}

// ReconfigureRequest is what a VM serves from now on.
type ReconfigureRequest struct {
	// UID is the uid of the proxy document the VM serves: LabelUID is set
	// to it (a warm pool's VM changes hands this way), and the VM's
	// call-home names it.
	UID string
	// Namespace and ProxyName name that document, for the VM's call-home.
	Namespace, ProxyName string
	// Engine is the proxy engine's configuration, Generation set: the VM
	// reports that generation once it serves it.
	Engine *vmconfig.Config
}

// AsReconfigurer returns the Reconfigurer beneath p's decorators (Unwrap),
// if p's backend is one. A decorator that must see the call (metering,
// faults) implements Reconfigurer itself and is found first.
func AsReconfigurer(p Provider) (Reconfigurer, bool) { return beneath[Reconfigurer](p) }

// TrafficStopper, an optional interface beside Provider, is a provider
// whose running VMs can be told to stop carrying new connections, or to
// carry them again, without a new VM and without a new configuration:
// the clouds whose VMs take no configuration in place
// (no Reconfigurer) but answer the control plane through their proxy port
// (internal/vmstatus). A Reconfigurer's VMs get the stop in their
// configuration (vmconfig.Config.TrafficStop) instead.
type TrafficStopper interface {
	// StopTraffic hands the VM providerID names stop (nil: carry again).
	// It is idempotent; it returns ErrNotFound when the VM is gone, and
	// an error when the VM could not be told (it does not answer, or its
	// answer is not its own).
	StopTraffic(ctx context.Context, providerID string, stop *vmconfig.TrafficStop) error
}

// AsTrafficStopper returns the TrafficStopper beneath p's decorators, if
// p's backend is one.
func AsTrafficStopper(p Provider) (TrafficStopper, bool) { return beneath[TrafficStopper](p) }
