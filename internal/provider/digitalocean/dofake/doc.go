// Package dofake is a fake of the part of DigitalOcean's API the
// digitalocean provider uses, for tests that drive the real Go client
// (github.com/digitalocean/godo) against it; DigitalOcean ships no
// emulator, and Debian no doctl. What it reads are godo's request types;
// what it writes are godo's types where they carry every field
// DigitalOcean's API description requires, and the wire types of wire.go
// (godo's, with the fields godo leaves out when empty written always)
// where they do not. The provider's tests hold every request and every
// answer to DigitalOcean's published OpenAPI description
// (internal/provider/digitalocean/testdata), so the fake cannot write
// what DigitalOcean says its API never does.
//
// What it serves, a file per resource:
//
//	droplets.go     Droplets create, get, list (tag_name, name), delete
//	reservedips.go  reserved IPs create (in a region or onto a Droplet), get, list, delete, and their assign and unassign actions
//	firewalls.go    cloud firewalls create, get, list, update, delete, and which Droplets each applies to (by tag)
//	tags.go         tags create, get, list, delete; a Droplet's tags are made with it
//	actions.go      actions get and list, and Settle, which finishes what is in progress
//	catalog.go      regions, sizes, images by slug, and the account, read-only
//	faults.go       errors in the HTTP answer: capacity, the Droplet limit, any fault by route
//	ratelimit.go    the rate limits: requests of sliding windows (5,000 an hour, 250 a minute), ratelimit-* headers, 429
//	wire.go         the wire types
//	server.go       routing, authentication, pagination, encoding, the clock
//	serve.go        Serve: Droplets that boot the real engine, for the local stack
//
// Nothing finishes by itself. A create answers a Droplet "new" with an
// in-progress create action; a delete leaves the Droplet "archive" (the
// API lists it so while it destroys it; the provider reads it as gone)
// and holding its reserved IP. Settle finishes all that is in progress at
// once: actions complete, new Droplets are active, destroyed ones are gone
// and their reserved IPs unassigned. A reserved IP is assigned to an
// active Droplet only, and at once; its action completes at Settle.
//
// A test plays what DigitalOcean does on its own:
//
//	Settle                              finish what is in progress
//	SetStatus, Put                      plant Droplets and states (a foreign tool's, another deployment's)
//	FailCreates, SetDropletLimit        capacity (a size or region not available) and the Droplet limit (422)
//	SetReservedIPLimit                  the account's reserved IP limit (422)
//	Fail                                refuse the next calls of a route with any error
//	SetRateLimit                        a window: its length, its limit and what was spent
//	SetClock, Advance                   the fake's time
//	Tamper                              change what the fake writes (a test of the test: a planted wrong field)
//	Calls, Creates, Tokens              what the fake was asked, and with which tokens
//	StartServing, StopServing           the local stack's Droplets boot: each runs the proxy
//	                                    engine of its user-data on a loopback address (serve.go)
//
// The comment beside each behaviour says which part of DigitalOcean's API
// reference (https://docs.digitalocean.com/reference/api/) it follows,
// and what the fake assumes where the reference is silent.
package dofake
