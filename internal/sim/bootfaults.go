package sim

// BootFaults are the faults of a boot on a cloud whose VMs do not call
// home (every Cloud's): VMs, by the cloud's id, that never serve, and
// those whose proxy says why it cannot. A cloud's Prober asks them of a
// VM; its faults arm them for VMs to come (HangNext, FailNext), and
// Created gives a new VM what is armed. A VM that served and stops has
// no way to say so that the provider reads, unlike the mock's VMs, which
// call home with their error.
type BootFaults struct {
	neverReady                    map[string]bool
	bootError                     map[string]string
	neverReadyNext, bootErrorNext int
}

// NewBootFaults returns boot faults with none armed.
func NewBootFaults() BootFaults {
	return BootFaults{neverReady: map[string]bool{}, bootError: map[string]string{}}
}

// HangNext arms a fault: the next VM created never serves.
func (b *BootFaults) HangNext() { b.neverReadyNext++ }

// FailNext arms a fault: the next VM created says it cannot serve
// (after any VM HangNext armed).
func (b *BootFaults) FailNext() { b.bootErrorNext++ }

// NeverReady reports whether VM id never serves.
func (b *BootFaults) NeverReady(id string) bool { return b.neverReady[id] }

// BootError is what VM id says it cannot do, or "".
func (b *BootFaults) BootError(id string) string { return b.bootError[id] }

// Created gives a new VM the boot faults that wait for one.
func (b *BootFaults) Created(id string) {
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
