// Package functions holds the three function entry points — ProxyAPI (HTTP),
// Reconcile and CollectGarbage (CloudEvent) — registered with
// functions-framework-go. It is the package at the root of the source that
// Cloud Run functions builds, so it holds only registration and delegates
// everything else to internal/app.
package functions

import (
	"sync"

	"github.com/egress-proxies/egress/internal/app"
)

// lazily builds a function's handler from the process runtime on its first
// call rather than in init, so a process serving only the other functions
// never reads its settings, and a configuration error reaches the log of
// the call it fails instead of crashing the instance at start.
func lazily[T any](build func(*app.Runtime) (T, error)) func() (T, error) {
	return sync.OnceValues(func() (T, error) {
		rt, err := app.Process()
		if err != nil {
			var zero T
			return zero, err
		}
		return build(rt)
	})
}
