package provider

import "time"

// Polled, an optional interface beside Provider, is a provider whose VMs
// cannot call home when they serve (Hetzner's have no identity to publish
// with, and nothing of the control plane's to call): the reconciler asks
// such a VM again every PollInterval while it boots, within a run's wait
// budget and then from the run it hands on to, rather than leave it to a
// call-home that never comes and so to the sweep.
type Polled interface {
	// PollInterval is how often a booting VM is asked: each time costs a
	// Get (the cloud's API, and the VM's status through its proxy port).
	PollInterval() time.Duration
}

// PollInterval is how often the reconciler asks p's booting VMs, looking
// beneath p's decorators (Unwrap) for a Polled provider; 0 for a provider
// whose VMs call home.
func PollInterval(p Provider) time.Duration {
	for {
		if s, ok := p.(Polled); ok {
			return s.PollInterval()
		}
		d, ok := p.(interface{ Unwrap() Provider })
		if !ok {
			return 0
		}
		p = d.Unwrap()
	}
}
