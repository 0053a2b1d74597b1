package hetzner

import (
	"context"

	"github.com/egress-proxies/egress/internal/provider"
)

// Prober asks a server whether its proxy serves. Hetzner's servers have
// no guest attributes and no Google identity to call home with, so the
// control plane asks them: through the proxy port, on a host name no one
// else may ask for, with a credential derived from a control-plane key
// and the uid, of which the server's configuration holds only a salted
// hash (the VM side's design; it provides the implementation).
type Prober interface {
	// Probe asks the proxy at ip:port, serving the proxy of uid, for its
	// status. An error means no answer (the server still boots, or its
	// proxy does not listen yet): the server is Provisioning. An answer
	// is its Status.
	Probe(ctx context.Context, ip string, port int32, uid string) (Status, error)
}

// Status is what a server's proxy says of itself.
type Status struct {
	// Generation is the generation of the engine configuration it serves.
	Generation int64
	// Ready says its self-test passed: it serves.
	Ready bool
	// Error, when it is not ready, is why (its bootstrap's reason).
	Error string
}

// Renderer makes the user-data of a server that runs the default
// bootstrap (req.StartupScript and req.Engine set): what cloud-init runs
// on Hetzner's images, holding nothing a reader of the server's user-data
// could use (Hetzner's API returns it to anyone holding the project's
// token). The VM side provides it.
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
