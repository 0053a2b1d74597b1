package app

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"

	"github.com/egress-proxies/egress/internal/clock"
	"github.com/egress-proxies/egress/internal/httpapi"
	"github.com/egress-proxies/egress/internal/metering"
)

// LoadQuota reads NAMESPACE_QUOTA, the number of proxies one namespace may
// hold (default 20).
func LoadQuota(getenv Getenv) (int, error) {
	v := getenv("NAMESPACE_QUOTA")
	if v == "" {
		return httpapi.DefaultQuota, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("config: NAMESPACE_QUOTA=%q is not a whole number of at least 1", v)
	}
	return n, nil
}

// NewProxyAPI assembles the ProxyAPI handler over the Firestore store.
func NewProxyAPI(rt *Runtime) (http.Handler, error) {
	quota, err := LoadQuota(rt.Getenv)
	if err != nil {
		return nil, err
	}
	st, err := rt.store(context.Background())
	if err != nil {
		return nil, err
	}
	api := httpapi.New(st, clock.Real{}, rt.Log, httpapi.Options{
		Quota:           quota,
		DefaultProvider: rt.Config.DefaultProvider,
		KnownProvider:   func(typ string) bool { return slices.Contains(rt.Providers.Types(), typ) },
		Project:         rt.Config.Project,
	})
	return metering.HTTP("ProxyAPI", rt.Log, api), nil
}
