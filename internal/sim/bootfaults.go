package sim

// bootFaults are the faults of a boot on a cloud whose VMs do not call
// home (hetzner, aws): VMs (by the cloud's id) that never serve, and
// those whose proxy says why it cannot; the Next counts are how many VMs
// to come will be so. A VM that served and stops has no way to say so
// that the provider reads (the VM side's call-home is to come), unlike
// the mock's VMs, which call home with their error.
type bootFaults struct {
	neverReady                    map[string]bool
	bootError                     map[string]string
	neverReadyNext, bootErrorNext int
}

func newBootFaults() bootFaults {
	return bootFaults{neverReady: map[string]bool{}, bootError: map[string]string{}}
}

// created gives a new VM the boot faults that wait for one.
func (b *bootFaults) created(id string) {
	if b.neverReady[id] || b.bootError[id] != "" {
		return // adopted: it has its fate already
	}
	switch {
	case b.neverReadyNext > 0:
		b.neverReadyNext--
		b.neverReady[id] = true
	case b.bootErrorNext > 0:
		b.bootErrorNext--
		b.bootError[id] = "the engine does not answer"
	}
}
