// Package clouds is the one list of the clouds the product serves in
// production: the deployed functions' composition root (internal/app)
// takes its clouds from All, and so do the docs, the CLI's help and the
// deploy tests. A cloud is its own folder under internal/provider, whose
// package declares one plugin.Plugin value, and one line here.
//
// The mock is not here: the local stack and the tests link it beside
// this list (app.Options.Linked), and the deployed functions do not
// contain it.
package clouds

import (
	"github.com/egress-proxies/egress/internal/provider/aws"
	"github.com/egress-proxies/egress/internal/provider/azure"
	"github.com/egress-proxies/egress/internal/provider/digitalocean"
	"github.com/egress-proxies/egress/internal/provider/gcp"
	"github.com/egress-proxies/egress/internal/provider/hetzner"
	"github.com/egress-proxies/egress/internal/provider/plugin"
)

// All are the production clouds, in the order the docs name them; the
// first is the default of PROVIDERS.
var All = []plugin.Plugin{
	gcp.Plugin,
	hetzner.Plugin,
	aws.Plugin,
	digitalocean.Plugin,
	azure.Plugin,
}
