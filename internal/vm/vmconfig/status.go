package vmconfig

// The status the control plane reads through the proxy port: on a cloud
// whose VMs have no guest attributes and no identity to call home with
// (Hetzner), the control plane asks the VM's engine itself, on the proxy
// port, with a credential only the control plane can make (internal/vmstatus
// derives it from a key of its own and the uid). The engine answers
// StatusHost there, to that credential only, and never proxies for it.

// StatusHost is the host name the engine answers for itself on the proxy
// port, in the absolute form of a plain-HTTP request:
// GET http://egress-status.invalid/status (a Status) and
// GET http://egress-status.invalid/access?after=N (an AccessPage). RFC
// 6761 reserves .invalid: no name under it ever resolves, so no request
// for it could be meant for a destination.
const StatusHost = "egress-status.invalid"

// The paths of StatusHost.
const (
	StatusPath = "/status"
	AccessPath = "/access"
)

// StatusAccess says who may read the engine's status on its proxy port,
// and from where.
type StatusAccess struct {
	// User is the status credential: its name and a salted hash of its
	// password (HashPassword), never the password. It is not a proxy
	// user: the engine carries nothing for it.
	User User `json:"user"`
	// Sources are the CIDRs the control plane asks from (its fixed egress
	// addresses): a client from one of them that is not also in
	// AllowedSourceRanges may ask for the status and nothing else. The
	// VM's kernel filter admits them to the proxy's HTTP port too.
	Sources []string `json:"sources"`
}

// Readiness is what the VM's agent says of the configuration it applied,
// in the file the engine serves it from (the engine's -readiness flag): a
// cloud-init boot's agent writes it where the GCE agent writes the guest
// attributes egress/ready and egress/error.
type Readiness struct {
	// Generation is the generation the agent applied, or tried to.
	Generation int64 `json:"generation"`
	// Ready says its self-test passed: the engine serves Generation.
	Ready bool `json:"ready"`
	// Error is the one-line reason it cannot serve, when it is not ready.
	Error string `json:"error,omitempty"`
	// Instance and Zone are which VM the agent runs on, as its cloud's
	// metadata service says (EC2's instance id and availability zone,
	// KeyIMDS); empty where the agent reads none.
	Instance string `json:"instance,omitempty"`
	Zone     string `json:"zone,omitempty"`
}

// Status is the answer of GET http://egress-status.invalid/status: the
// generation the engine serves, whether the agent proved it serves that
// generation, why not, and the counters.
type Status struct {
	Generation int64  `json:"generation"`
	Ready      bool   `json:"ready"`
	Error      string `json:"error,omitempty"`
	// Instance and Zone are the readiness's: which VM answers.
	Instance string `json:"instance,omitempty"`
	Zone     string `json:"zone,omitempty"`
	Stats    Stats  `json:"stats"`
}
