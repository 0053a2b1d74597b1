// Package console is the web console: the ProxyAPI's own pages for people
// who do not live in a terminal, served by the API's function under
// /console/ (internal/app mounts it), over the same routes, identities
// and roles as the API.
//
// # How it is built, and why
//
// The pages are rendered on the server with html/template, and a little
// plain JavaScript (assets/console.js) enhances them: it refreshes the
// live parts, shows dates in the viewer's time zone, copies the proxy URL
// and asks before a form leaves the page. Every page and every action
// works without it (forms post and redirect), so there is no front-end
// build, no Node at build or run time and nothing from a CDN: the
// templates and the two assets are embedded with go:embed, and the
// assets are served under names that carry a hash of their content, so
// they are cached for a year and never stale. Server rendering keeps the
// console small and testable from Go (a page is HTML a test can read) and
// keeps secrets out of the browser by construction: a page holds only
// what the API answered the caller.
//
// # Same API, same rules
//
// The console never reads the store. Each page calls the API in process,
// through package client (the CLI's client) over a transport that hands
// the request to the API's routes with the browser's identity headers
// (the IAP assertion on Cloud Run, an ID token, or none locally, where
// the API takes LOCAL_IDENTITY). What the API refuses, the page says,
// with the API's message and, for a form, each field violation beside
// its field; what the API does not show the caller (another namespace, a
// proxy URL without the role to read it) is never in the page. The
// actions a page offers follow the caller's role by the API's own table
// (tenancy.Allowed): an action the caller may not take is not shown, and
// the API refuses it anyway if it is forged. Each action is named as the
// CLI's command that does the same (Actions; a test in cmd/egress holds
// the two together).
//
// # Live, and what it costs
//
// The proxies table and a proxy's status refresh by polling a fragment of
// the page (GET …/rows, GET …/status): every 2 seconds while something
// shown is on its way (not Ready nor Failed), every 15 seconds once all
// is settled, never while the tab is hidden. Server-sent events would
// hold a Cloud Run request open per viewer and still read Firestore per
// change; a poll is one short request. A table refresh reads 1 namespace
// document and 1 document per proxy listed (Firestore bills a query that
// returns nothing as 1 read); a proxy's status refresh reads 2 (its
// namespace and itself: the API's GET of the proxy, never the
// namespace's GET, which the fragment does not need, since what the
// caller may not read of a status the API does not answer).
//
// # What it costs, in money
//
// A namespace's page shows its month at a glance (so far, forecast, its
// budget's share, what is unknown and why) from the namespace's GET, and
// the table and a proxy's status each proxy's status.cost: the API's
// figures, never the console's. The month is read with the page, not
// refreshed: where the deployment costs proxies, the namespace's GET
// reads its proxies to sum their month (1 read each), so a page load
// reads 1 + 2 per proxy (TestWhatAViewReads) and a refresh nothing more
// than before. status.cost rides in the documents the refreshes read
// already, and is at most an hour old (spend.Refresh; the collector
// asks for a settled proxy's).
//
// # Traffic over time
//
// The API keeps only a proxy's last traffic report (status.traffic). The
// console keeps a short history of the reports it has seen (History: the
// last 60 per proxy, for at most 2,000 proxies, in the memory of the
// instance serving it) and draws it as an inline SVG on the server. An
// instance that starts afresh starts a new history; that is the price of
// no extra write per report.
//
// # Cross-site requests
//
// Behind IAP the browser's session cookie authenticates every request,
// so a page of another site could post a form here. Every unsafe request
// is checked by net/http's CrossOriginProtection (Sec-Fetch-Site and
// Origin), and the pages forbid framing (frame-ancestors 'none').
package console
