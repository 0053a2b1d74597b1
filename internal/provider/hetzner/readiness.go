package hetzner

import "github.com/egress-proxies/egress/internal/provider/vmside"

// The VM side's interfaces, as this provider has always named them: they
// live in package vmside, shared with the aws provider, whose VMs boot
// and are seen serving the same way. A server's readiness is asked
// through its proxy port (Prober), since Hetzner's servers have no guest
// attributes and no Google identity to call home with; what it boots
// with is user-data made by a Renderer. *vmstatus.Prober and
// cloudinit.Renderer (internal/bootstrap/cloudinit) are the
// implementations.
type (
	Prober       = vmside.Prober
	Status       = vmside.Status
	Renderer     = vmside.Renderer
	RendererFunc = vmside.RendererFunc
	ProberFunc   = vmside.ProberFunc
)
