package functions

import (
	"net/http"

	"github.com/GoogleCloudPlatform/functions-framework-go/functions"

	"github.com/egress-proxies/egress/internal/app"
)

func init() {
	functions.HTTP("ProxyAPI", proxyAPI)
}

var proxyAPIHandler = lazily(app.NewProxyAPI)

// proxyAPI is the ProxyAPI entry point: the HTTP API of DESIGN §3.
func proxyAPI(w http.ResponseWriter, r *http.Request) {
	h, err := proxyAPIHandler()
	if err != nil {
		http.Error(w, "ProxyAPI cannot start: "+err.Error(), http.StatusInternalServerError)
		return
	}
	h.ServeHTTP(w, r)
}
