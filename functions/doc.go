// Package functions holds the three function entry points — ProxyAPI (HTTP),
// Reconcile and CollectGarbage (CloudEvent) — registered with
// functions-framework-go. It is the package at the root of the source that
// Cloud Run functions builds, so it holds only registration and delegates
// everything else to internal/app.
package functions
