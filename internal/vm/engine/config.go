// Package engine is the forward proxy that runs on each proxy VM: HTTP
// CONNECT, plain HTTP and SOCKS5, Basic (or RFC 1929) credentials checked
// against salted hashes, tunnels only to the allowed ports, the client's
// source and the tunnel's destination checked against ranges, a bandwidth
// limit, bounds on every wait, an access line per request and counters of
// the traffic it carries. The binary is cmd/egress-proxy; its
// configuration is vmconfig.Config, which the VM's agent
// (internal/vm/agent) writes from instance metadata, and the mock provider
// runs it on loopback for the local stack.
//
// This file reads a configuration. The others: rules.go (a Config checked,
// and the decisions on credentials, sources, ports and destinations),
// answers.go (every refusal's status, reason and SOCKS5 reply), dial.go
// (resolve once, check every address, race the checked ones), source.go
// (the source address of an IPv6 connection, and the session a username
// names), server.go
// (the Server: listeners, reload and revocation, drain, stats), conns.go
// (each client's connection, admitted within the cap and tracked), http.go
// (the HTTP connection loop), tunnel.go (CONNECT, and the tunnel SOCKS5
// shares), relay.go (splice, the pipe pool), forward.go (plain HTTP),
// socks5.go (SOCKS5), udp.go (SOCKS5's UDP ASSOCIATE), limit.go (the
// bandwidth limit) and access.go (the access log).
package engine

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/egress-proxies/egress/internal/vm/vmconfig"
)

// ReadConfig reads the engine's configuration from JSON, refusing fields it does not know:
// a configuration meant for a newer engine fails to load (and a reload
// keeps the rules in force) rather than half-applies.
func ReadConfig(data []byte) (vmconfig.Config, error) {
	var c vmconfig.Config
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return vmconfig.Config{}, fmt.Errorf("engine: reading the configuration: %w", err)
	}
	if _, err := compile(c); err != nil {
		return vmconfig.Config{}, err
	}
	return c, nil
}
