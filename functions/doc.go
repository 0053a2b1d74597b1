// Package functions holds the three function entry points — ProxyAPI (HTTP),
// Reconcile and CollectGarbage (CloudEvent) — registered with
// functions-framework-go. It is the package at the root of the source that
// Cloud Run functions builds, so it holds only registration and delegates
// everything else to internal/app.
package functions

import (
	"context"
	"os"
	"sync"

	"github.com/egress-proxies/egress/internal/app"
)

// process is the one App of this process, built on the first request
// rather than in init: a configuration error then reaches the log of the
// call it fails instead of crashing the instance at start, and a build that
// failed (a client that could not be made) is tried again by the next
// request instead of breaking the instance until it is recycled.
var process = &appHolder{build: func(ctx context.Context) (*app.App, error) {
	return app.New(ctx, os.Getenv, app.Options{Serve: app.ServedBy(os.Getenv("FUNCTION_TARGET"))})
}}

// appHolder keeps the App once it is built, and only then.
type appHolder struct {
	build func(context.Context) (*app.App, error)

	mu  sync.Mutex
	app *app.App
}

func (h *appHolder) get(ctx context.Context) (*app.App, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.app != nil {
		return h.app, nil
	}
	a, err := h.build(ctx)
	if err != nil {
		return nil, err
	}
	h.app = a
	return a, nil
}
