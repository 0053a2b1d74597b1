package digitalocean

import "github.com/egress-proxies/egress/internal/provider/vmside"

// The VM side's interfaces (package vmside), as hetzner's and aws's
// providers take them: a Droplet's readiness is asked through its proxy
// port (Prober), since a Droplet has no identity to call home with; what
// it boots with is user-data made by a Renderer. *vmstatus.Prober and
// cloudinit.Renderer (internal/bootstrap/cloudinit) are the
// implementations.
type (
	Prober       = vmside.Prober
	Status       = vmside.Status
	Renderer     = vmside.Renderer
	RendererFunc = vmside.RendererFunc
	ProberFunc   = vmside.ProberFunc
)
