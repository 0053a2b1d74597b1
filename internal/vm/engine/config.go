// Package engine is the forward proxy that runs on each proxy VM: HTTP
// CONNECT and plain HTTP, Basic credentials checked against salted hashes,
// CONNECT only to the allowed ports, the client's source and the tunnel's
// destination checked against ranges, and counters of the traffic it
// carries. The binary is cmd/egress-proxy; its configuration is
// vmconfig.Config, which the VM's agent (internal/vm/agent) writes from
// instance metadata, and the mock provider runs it on loopback for the
// local stack.
//
// This file reads a configuration. The others: rules.go (a Config checked,
// and the decisions on credentials, sources, ports and destinations),
// dial.go (resolve once, check every address, dial a checked one),
// server.go (the Server: serving, reload, drain, stats), tunnel.go
// (CONNECT, spliced by the kernel) and forward.go (plain HTTP).
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
