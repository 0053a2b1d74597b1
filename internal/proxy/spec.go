package proxy

// DefaultPort is the proxy port when a spec gives none.
const DefaultPort = 3128

// IPPolicy says what external address a proxy's VMs have.
type IPPolicy string

const (
	// IPEphemeral: each VM gets the address its provider gives it; a
	// replaced VM comes back with another.
	IPEphemeral IPPolicy = "Ephemeral"
	// IPStatic: a reserved regional address, made before the first VM and
	// kept across replacements and rotations, so an allowlist that names
	// it survives a lost VM; released after the last VM on deletion.
	IPStatic IPPolicy = "Static"
)

// IPv6Egress says how a proxy's connections to IPv6 destinations pick
// their source (spec.ipv6Egress).
type IPv6Egress string

const (
	// IPv6Off: no source of the prefix is chosen; the default where the
	// VM has no prefix.
	IPv6Off IPv6Egress = "off"
	// IPv6Single: one address, the VM's own, for every connection; the
	// default where the VM has a prefix.
	IPv6Single IPv6Egress = "single"
	// IPv6PerConnection: a fresh random address of the prefix for each
	// connection.
	IPv6PerConnection IPv6Egress = "perConnection"
	// IPv6PerSession: one address of the prefix per session (a client's
	// USER-session-ID), a fresh one per connection for plain USER.
	IPv6PerSession IPv6Egress = "perSession"
)

// IPv6Egresses are the modes, in the order the docs list them.
var IPv6Egresses = []IPv6Egress{IPv6Off, IPv6Single, IPv6PerConnection, IPv6PerSession}

// NeedsPrefix reports whether the mode picks addresses of a routed prefix
// beyond the VM's own, which only a cloud that gives one can serve.
func (m IPv6Egress) NeedsPrefix() bool { return m == IPv6PerConnection || m == IPv6PerSession }

// DefaultIPv6Egress is the mode of a spec that names none, on a cloud
// whose VMs get a routed IPv6 prefix of prefixLen bits (0: none).
func DefaultIPv6Egress(prefixLen int) IPv6Egress {
	if prefixLen > 0 {
		return IPv6Single
	}
	return IPv6Off
}

// Placement says where the VM runs and what it is made of.
type Placement struct {
	Region      string `json:"region,omitempty" firestore:"region,omitempty"`
	Zone        string `json:"zone,omitempty" firestore:"zone,omitempty"`
	MachineType string `json:"machineType,omitempty" firestore:"machineType,omitempty"`
	Image       string `json:"image,omitempty" firestore:"image,omitempty"`
}

// Spec is what the user asked for. A POST with another spec for an existing
// name is a conflict; a PATCH changes the reconfigurable fields
// (allowedSourceRanges, connectPorts, bandwidthLimit, accessLog, ipv6Egress) only, and
// counts a generation.
type Spec struct {
	// Provider is the registry type of the cloud backend ("mock", "gcp").
	Provider  string    `json:"provider,omitempty" firestore:"provider"`
	Placement Placement `json:"placement" firestore:"placement"`
	Port      int32     `json:"port,omitempty" firestore:"port"`
	// CloudInit is inline user-data for the VM.
	CloudInit string `json:"cloudInit,omitempty" firestore:"cloudInit,omitempty"`
	// CloudInitSecret is a Secret Manager version name
	// (projects/P/secrets/S/versions/V) whose payload is the user-data. Only
	// the name is stored; the reconciler reads the payload when it creates
	// the VM.
	CloudInitSecret string `json:"cloudInitSecret,omitempty" firestore:"cloudInitSecret,omitempty"`
	// AllowedSourceRanges are the CIDRs that may reach the proxy port.
	AllowedSourceRanges []string `json:"allowedSourceRanges,omitempty" firestore:"allowedSourceRanges,omitempty"`
	// ConnectPorts are the ports a CONNECT through the proxy may reach (and
	// the only ports it opens connections to); empty means
	// DefaultConnectPorts.
	ConnectPorts []int32 `json:"connectPorts,omitempty" firestore:"connectPorts,omitempty"`
	// IPPolicy is Ephemeral (the default) or Static.
	IPPolicy IPPolicy `json:"ipPolicy,omitempty" firestore:"ipPolicy,omitempty"`
	// MaxAge, a Go duration ("24h"), rotates the proxy's VM once it is
	// that old; empty never rotates by age. The API holds it to at least
	// ROTATE_MIN_INTERVAL, the least time between two rotations a user
	// asks for: a rotation by age is one the spec asks for, and counts
	// against the namespace's NAMESPACE_CREATES_PER_HOUR like one.
	MaxAge string `json:"maxAge,omitempty" firestore:"maxAge,omitempty"`
	// Socks5Port, when set, is a second port of the proxy's engine that
	// serves SOCKS5 (RFC 1928, with RFC 1929's username and password: the
	// proxy's credentials; CONNECT, and UDP ASSOCIATE with Socks5UDP) to
	// the same sources, destinations and CONNECT ports as HTTP. 0 serves
	// none. Like Port it must be a port the firewall opens (PROXY_PORTS),
	// and not Port itself.
	Socks5Port int32 `json:"socks5Port,omitempty" firestore:"socks5Port,omitempty"`
	// Socks5UDP, with Socks5Port, carries SOCKS5 UDP ASSOCIATE (RFC 1928
	// §7) too: the same users and sources, each datagram's destination
	// checked against the same deny ranges, the bandwidth limit and one
	// access line per association with its datagram counts; the relay is
	// the same port number over UDP (which the platform's firewall must
	// open for UDP too). False, the default: an ASSOCIATE is refused.
	Socks5UDP bool `json:"socks5UDP,omitempty" firestore:"socks5UDP,omitempty"`
	// IPv6Egress is how a connection to an IPv6 destination picks its
	// source address from the VM's routed IPv6 prefix (status.ipv6Prefix):
	// IPv6Off, IPv6Single, IPv6PerConnection or IPv6PerSession. The API
	// writes the default, single where the proxy's cloud gives its VMs a
	// prefix and off where it gives none (the plugin's IPv6Prefix), and
	// refuses perConnection and perSession on a cloud that gives none: a
	// proxy that cannot rotate its source must say so at the API, not at
	// boot. Empty, in a document from before the field, is what the VM
	// did then: one address. Connections to IPv4 destinations keep the
	// VM's IPv4 address whatever it says. A PATCH changes it: live where
	// the VM takes changes in place, with a new VM elsewhere.
	IPv6Egress IPv6Egress `json:"ipv6Egress,omitempty" firestore:"ipv6Egress,omitempty"`
	// BandwidthLimit bounds each direction of the proxy's traffic, every
	// tunnel and request together, as ParseBandwidth reads it ("100Mbit"); empty is no
	// bound. A PATCH changes it on the VM.
	BandwidthLimit string `json:"bandwidthLimit,omitempty" firestore:"bandwidthLimit,omitempty"`
	// TrafficQuota bounds the bytes the proxy carries in a calendar month
	// (UTC), both directions together, as ParseTrafficQuota reads it
	// ("500GB"); empty is no bound. The engine enforces it: once the
	// month's bytes reach it, new connections are refused (403
	// quota-exceeded; SOCKS5 reply 2) and the running ones finish; the
	// count starts again at 00:00 UTC on the first. A PATCH changes it on
	// the VM, as it does the bandwidth limit.
	TrafficQuota string `json:"trafficQuota,omitempty" firestore:"trafficQuota,omitempty"`
	// AccessLog says whether the proxy keeps one access line per tunnel
	// and per plain-HTTP request (who reached which host and port, when,
	// and how much): on unless a tenant that must not keep them turns it
	// off. Nil is on (WithDefaults writes it); a PATCH changes it on the
	// VM (AccessLogOn).
	AccessLog *bool `json:"accessLog,omitempty" firestore:"accessLog,omitempty"`
}

// AccessLogOn reports whether the proxy keeps an access log: the spec
// says so, or says nothing (a document from before the field).
func (s Spec) AccessLogOn() bool { return s.AccessLog == nil || *s.AccessLog }

// OwnCloudInit reports whether the spec brings its own cloud-init (inline
// or from a secret): its VM runs that, not the default bootstrap, so no
// live change reaches it in place and no warm pool serves it.
func (s Spec) OwnCloudInit() bool { return s.CloudInit != "" || s.CloudInitSecret != "" }

// DefaultConnectPorts are the ports a CONNECT may reach when the spec names
// none: HTTPS and HTTP.
var DefaultConnectPorts = []int32{443, 80}
