// Package hetznerfake is a fake of the part of the Hetzner Cloud API the
// hetzner provider uses, for tests that drive the real Go SDK
// (github.com/hetznercloud/hcloud-go/v2) and Hetzner's own CLI (hcloud,
// which honours HCLOUD_ENDPOINT) against it; Hetzner ships no emulator.
// Every body it reads and writes is one of the SDK's wire types
// (hcloud/schema), so the fake cannot drift from what the SDK sends and
// parses.
//
// What it serves, a file per resource:
//
//	servers.go     servers create, get, list (label selectors, name), update of labels, delete
//	primaryips.go  Primary IPs create, get, list, delete, assign and unassign
//	actions.go     actions get and list (by id), and Settle, which finishes them
//	catalog.go     locations, datacenters, server types and images, read-only
//	pricing.go     the prices (GET /v1/pricing, and each server type's), read-only
//	selector.go    Hetzner's label selector language
//	faults.go      errors in the HTTP answer: capacity, quota, any fault by method
//	ratelimit.go   the rate limit: a bucket refilled per second, RateLimit-* headers, 429
//	server.go      routing, authentication, pagination, encoding, the clock
//	serve.go       Serve: servers that boot the real engine, for the local stack
//
// Nothing finishes by itself. A create answers a server "initializing"
// with a running create_server action and a running start_server next
// action; a delete answers a running delete_server action and leaves the
// server "deleting". Settle finishes all that is in progress at once:
// actions succeed, initializing servers run, deleting ones are gone with
// their ephemeral Primary IPs (a Primary IP made with auto_delete false
// stays, unassigned). OnActionPoll lets a client that waits on an action
// (hcloud's CLI) settle it.
//
// A test plays what Hetzner does on its own:
//
//	Settle, OnActionPoll          finish what is in progress
//	SetStatus, Put                plant servers and states (a foreign tool's, another deployment's)
//	FailCreates, SetServerLimit,  capacity (resource_unavailable, placement_error) and quota (resource_limit_exceeded:
//	SetPrimaryIPLimit             the project's servers and Primary IPs)
//	Fail                          refuse the next calls of a method with any error
//	SetRateLimit(Window)          the bucket: limit (over an hour or another window) and what remains
//	SetClock, Advance             the fake's time
//	Calls, Creates, Tokens        what the fake was asked, and with which tokens
//	StartServing, StopServing     the local stack's servers boot: each runs the proxy
//	                              engine of its user-data on a loopback address (serve.go)
//
// The comment beside each behaviour says which part of Hetzner's API
// reference (https://docs.hetzner.cloud) it follows, and what the fake
// assumes where the reference is silent.
package hetznerfake
