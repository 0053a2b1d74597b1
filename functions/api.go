package functions

import (
	"net/http"
	"sync"

	"github.com/GoogleCloudPlatform/functions-framework-go/functions"

	"github.com/egress-proxies/egress/internal/app"
)

func init() {
	functions.HTTP("ProxyAPI", proxyAPI)
}

// proxyAPIHandler is built on the first request, so a configuration error
// is answered and logged rather than crashing the instance at start.
var proxyAPIHandler = sync.OnceValues(func() (http.Handler, error) {
	rt, err := app.Process()
	if err != nil {
		return nil, err
	}
	return app.NewProxyAPI(rt)
})

// proxyAPI is the ProxyAPI entry point: the HTTP API of DESIGN §3.
func proxyAPI(w http.ResponseWriter, r *http.Request) {
	h, err := proxyAPIHandler()
	if err != nil {
		http.Error(w, "ProxyAPI cannot start: "+err.Error(), http.StatusInternalServerError)
		return
	}
	h.ServeHTTP(w, r)
}
