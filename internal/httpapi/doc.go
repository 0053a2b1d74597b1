// Package httpapi is the ProxyAPI: the HTTP interface over the store of
// namespace and proxy documents (docs/reference/api.md). It creates,
// changes and reads documents; it never calls a provider, since a
// document's events drive the reconciler.
//
// # Who may do what
//
// The caller is the email of the ID token Cloud Run verified, or, for a
// browser that came through Identity-Aware Proxy (the web console), of
// IAP's signed header, verified here against Google's keys (identify,
// package iap); one identity per request, and a request without one is
// 401. Platform admins (Options.Admins) act
// everywhere and alone create and delete namespaces and change quotas;
// otherwise a caller's role in a namespace (package tenancy: viewer,
// editor, owner) decides, by the permission each route needs (Routes).
//
// A caller outside a namespace — no role in it, not an admin — gets 403
// PERMISSION_DENIED for everything in it, with the same body whether the
// namespace or the proxy exists or not: nobody learns what exists where
// they may not look. That holds for bad input too: a request in a
// namespace is authorized before its body's faults are told. Members and
// admins get 404 for what does not exist; creating a proxy in a namespace
// that does not exist is 404 with a clear message to an admin and, to
// anyone else, the 403 above.
//
// status.proxyURL, the proxy's credentials, is shown to the namespace's
// editors and owners only; a viewer, and an admin who is not a member,
// see the resource without it.
//
// # Answers
//
// Errors are JSON in the Google API shape (AIP-193): {"error":{"code",
// "status","message","details"}}, whose details always carry a
// google.rpc.ErrorInfo (reason, domain egress-proxies) and, when fields
// broke rules, a google.rpc.BadRequest with one fieldViolation per rule
// (field, description, reason). Bad input changes nothing: every rule is
// checked before the store is written; a feature the operator has not
// enabled is 403, anything else outside the rules or the policy 400.
//
// Each request logs one line, the invocation line of package metering
// with the request in Cloud Logging's httpRequest shape; each call of a
// route marked Audited (every one that changes something: a proxy's
// create, PATCH, rotation, new credentials and deletion, a namespace's
// create, change and deletion, a pool's PUT and deletion), allowed or
// refused, logs one audit line: who, the action (the route's Permission),
// the resource and the outcome, never a body. docs/reference/api.md lists
// them, written from Routes.
package httpapi
