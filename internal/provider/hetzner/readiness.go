package hetzner

import (
	"context"

	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/vmstatus"
)

// Prober asks a server whether its proxy serves. Hetzner's servers have
// no guest attributes and no Google identity to call home with, so the
// control plane asks them: through the proxy port, on a host name no one
// else may ask for, with a credential derived from a control-plane key
// and the uid, of which the server's configuration holds only a salted
// hash. *vmstatus.Prober is the implementation.
type Prober interface {
	// Probe asks the proxy at ip:port, serving the proxy of uid, for its
	// status. An error means no answer (the server still boots, or its
	// proxy does not listen yet): the server is Provisioning. An answer
	// is its Status.
	Probe(ctx context.Context, ip string, port int32, uid string) (Status, error)
}

// Status is what a server's proxy says of itself: the generation it
// serves, whether it proved it serves it, why not, and its traffic.
type Status = vmstatus.Status

// Renderer makes the user-data of a server that runs the default
// bootstrap (req.StartupScript and req.Engine set): what cloud-init runs
// on Hetzner's images, holding nothing a reader of the server's user-data
// could use (Hetzner's API returns it to anyone holding the project's
// token). cloudinit.Renderer (internal/bootstrap/cloudinit) is the
// implementation.
type Renderer interface {
	UserData(req provider.CreateRequest) (string, error)
}

// RendererFunc is a function as a Renderer.
type RendererFunc func(req provider.CreateRequest) (string, error)

// UserData calls f.
func (f RendererFunc) UserData(req provider.CreateRequest) (string, error) { return f(req) }

// ProberFunc is a function as a Prober.
type ProberFunc func(ctx context.Context, ip string, port int32, uid string) (Status, error)

// Probe calls f.
func (f ProberFunc) Probe(ctx context.Context, ip string, port int32, uid string) (Status, error) {
	return f(ctx, ip, port, uid)
}
