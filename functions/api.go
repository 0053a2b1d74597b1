package functions

import (
	"net/http"

	"github.com/GoogleCloudPlatform/functions-framework-go/functions"
)

func init() {
	functions.HTTP("ProxyAPI", proxyAPI)
}

// proxyAPI is the ProxyAPI entry point: the HTTP API of
// docs/reference/api.md.
func proxyAPI(w http.ResponseWriter, r *http.Request) {
	a, err := process.get(r.Context())
	if err != nil {
		http.Error(w, "ProxyAPI cannot start: "+err.Error(), http.StatusInternalServerError)
		return
	}
	a.ProxyAPI().ServeHTTP(w, r)
}
