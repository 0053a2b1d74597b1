// Package vmconfig is the contract between the control plane and a proxy
// VM: what the control plane hands the VM — the proxy engine's
// configuration (Config), the instance metadata items that carry it and
// the startup script's template — and what the VM reports back (the guest
// attributes, the engine's Stats). The control plane renders and reads
// these (internal/bootstrap, the providers, the reconciler); the VM's
// programs (internal/vm/engine, internal/vm/agent, cmd/egress-proxy) obey
// them. It is the one package of internal/vm the control plane imports:
// the engine and the agent themselves run only on the VM, in the mock
// provider's loopback VMs and in tests.
//
// This file is the engine's configuration: the JSON a VM's engine loads,
// the password hash and the counters. metadata.go holds the metadata
// items and guest attributes; script.go the startup script's template.
package vmconfig

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"strings"
	"time"
)

// Config is the engine's whole configuration, read from one JSON file (on a
// VM, written by the startup script or the configuration agent from
// instance metadata). Applying a new Config keeps established tunnels.
type Config struct {
	// Generation is the configuration's generation, reported in Stats so
	// the control plane can tell which configuration a VM serves.
	Generation int64 `json:"generation"`
	// Listen is the address the proxy serves on, such as ":3128".
	Listen string `json:"listen"`
	// Users are the accepted credentials. More than one lets a rotation
	// overlap; a request must match one of them. None is allowed only at
	// Generation 0: a warm pool's VM, which answers every request 407
	// until it is claimed.
	Users []User `json:"users"`
	// AllowedSourceRanges are the CIDRs a client may connect from; a
	// connection from elsewhere is closed before a byte is read. The host
	// firewall enforces the same ranges: this is the second wall.
	AllowedSourceRanges []string `json:"allowedSourceRanges"`
	// ConnectPorts are the destination ports CONNECT (and plain HTTP) may
	// reach.
	ConnectPorts []int `json:"connectPorts"`
	// DenyDestinations are the CIDRs no request may reach (the metadata
	// server, private and special ranges), checked on the address a name
	// resolves to, before dialling. The VM's nftables filter enforces them
	// again in the kernel.
	DenyDestinations []string `json:"denyDestinations"`
	// AllowDestinations are exceptions to DenyDestinations, for the local
	// stack's own test targets on loopback; empty on a VM.
	AllowDestinations []string `json:"allowDestinations,omitempty"`
	// StatsListen, when set, is a loopback address serving GET /stats with
	// the Stats as JSON, and GET /access?after=SEQ with the access log's
	// newest lines (AccessPage).
	StatsListen string `json:"statsListen,omitempty"`
	// Socks5Listen, when set, is the address the same engine serves SOCKS5
	// on (RFC 1928, username/password per RFC 1929), such as ":1080": the
	// same users, source ranges, destination filter, ports, counters and
	// access log as HTTP. Empty: SOCKS5 is off (a spec asks for it with
	// spec.socks5Port).
	Socks5Listen string `json:"socks5Listen,omitempty"`
	// Socks5UDP, with Socks5Listen, carries SOCKS5 UDP ASSOCIATE (RFC 1928
	// §7): the engine relays its clients' datagrams on a UDP socket of
	// Socks5Listen's port, every datagram's destination resolved and
	// checked against DenyDestinations, under the bandwidth limit, with
	// one AccessLine per association (spec.socks5UDP). False: an
	// ASSOCIATE is answered "command not supported" (07). The relay's
	// socket is opened at the engine's start: turning it on takes a
	// restart, turning it off applies at once and ends the associations.
	Socks5UDP bool `json:"socks5UDP,omitempty"`
	// IPv6Prefix is the VM's routed IPv6 prefix (CIDR), "" when it has none.
	IPv6Prefix string `json:"ipv6Prefix,omitempty"`
	// IPv6Egress is how connections to IPv6 destinations pick their source: "" or "off", "single", "perConnection", "perSession".
	IPv6Egress string `json:"ipv6Egress,omitempty"`
	// IPv6PrefixLength is the length of the prefix the cloud routes to
	// the VM around its own IPv6 address, for a configuration made before
	// the cloud said the prefix (a create): with a rotating IPv6Egress and
	// no IPv6Prefix, the agent takes the VM's global IPv6 address to this
	// length as the prefix before the engine reads the configuration.
	IPv6PrefixLength int `json:"ipv6PrefixLength,omitempty"`
	// BandwidthBitsPerSecond bounds the proxy's traffic as a whole, every
	// tunnel, SOCKS5 connection and plain request together, in bits a
	// second (spec.bandwidthLimit); each direction is bounded by it on its
	// own (the bytes from the clients, and the bytes to them). 0 is no
	// limit. A reload applies a new value to the traffic already flowing.
	BandwidthBitsPerSecond int64 `json:"bandwidthBitsPerSecond,omitempty"`
	// TrafficQuotaBytes bounds the bytes the proxy carries in a calendar
	// month (UTC), both directions together (spec.trafficQuota): once
	// Stats.MonthBytes reaches it, new connections and requests are
	// refused (403 quota-exceeded, SOCKS5 reply 2) and the open ones
	// finish. 0 is no quota. A reload applies a new value at once; the
	// month's count is the engine's, kept across reloads and restarts
	// (Options.TrafficState), and starts again at 00:00 UTC on the first.
	TrafficQuotaBytes int64 `json:"trafficQuotaBytes,omitempty"`
	// TrafficStop, when set, is the namespace's budget reached in
	// TrafficStop.Month (tenancy.StopTraffic): new connections and
	// requests are refused (403 budget-exceeded, SOCKS5 reply 2) and the
	// open ones finish, as at the quota. It lapses by itself when the
	// engine's clock leaves that month, so the month's turn lifts it with
	// no word from the control plane; a raised budget lifts it by a
	// configuration without it. A reload applies it at once.
	TrafficStop *TrafficStop `json:"trafficStop,omitempty"`
	// TrafficCarried is what the proxy's VMs before this one carried this
	// month, as the last of them reported it (status.traffic), written by
	// the control plane with a quota: an engine that starts with no count
	// of its own for that month (a new VM) starts from it, so a new VM is
	// no fresh quota. A reload does not read it: the running count is
	// already at least that.
	TrafficCarried *MonthCount `json:"trafficCarried,omitempty"`
	// AccessLog keeps one AccessLine per tunnel, SOCKS5 connection and
	// plain-HTTP request (served at StatsListen's /access and written to
	// the engine's log); false keeps none (spec.accessLog, on unless a
	// tenant turns it off). The control plane always writes it, true or
	// false, so that an engine never has to guess what a missing key meant.
	AccessLog bool `json:"accessLog"`
	// Status, when set, lets the control plane read the engine's status
	// and access log through the proxy port (status.go): the VMs of a
	// cloud that have no other way to say they serve. Nil on GCE, whose
	// VMs write guest attributes.
	Status *StatusAccess `json:"status,omitempty"`

	// The bounds; zero takes the Default… value. MaxConnections waits for
	// a restart; the others apply to the next connection or request.

	// MaxConnections bounds the client connections open at once, HTTP and
	// SOCKS5 together; one more is answered 503 (HTTP) or closed (SOCKS5)
	// at once. Zero sizes it to the engine's descriptor limit: each
	// connection holds up to DescriptorsPerConnection descriptors, and
	// ReservedDescriptors stay free for everything else.
	MaxConnections int `json:"maxConnections,omitempty"`
	// BodyIdleTimeout bounds the wait for the next byte of a plain-HTTP
	// body in flight, both ways: a request body from the client, a
	// response body from the destination, and the client's taking of the
	// response.
	BodyIdleTimeout Duration `json:"bodyIdleTimeout,omitempty"`
	// UnauthenticatedIdleTimeout is how long a client connection that has
	// not yet authenticated (it was answered 407, or another refusal) is
	// kept open for its next request: long enough for a client to answer
	// the challenge, short enough that probes do not hold descriptors.
	UnauthenticatedIdleTimeout Duration `json:"unauthenticatedIdleTimeout,omitempty"`

	// The timeouts of each phase; zero takes the Default… value. Listen,
	// StatsListen, HeaderTimeout and ResponseHeaderTimeout wait for a
	// restart: the rest of a new Config applies to the next request.

	// HeaderTimeout bounds reading a request's head, its credentials
	// included, from a new connection.
	HeaderTimeout Duration `json:"headerTimeout,omitempty"`
	// DialTimeout bounds resolving and connecting to the destination.
	DialTimeout Duration `json:"dialTimeout,omitempty"`
	// ResponseHeaderTimeout bounds waiting for the head of a plain HTTP
	// request's response.
	ResponseHeaderTimeout Duration `json:"responseHeaderTimeout,omitempty"`
	// IdleTimeout closes a tunnel through which no byte moved either way
	// for that long, and a kept-alive client connection that sends no
	// request for that long.
	IdleTimeout Duration `json:"idleTimeout,omitempty"`
	// UDPIdleTimeout ends a SOCKS5 UDP association through which no
	// datagram moved either way for that long, even while its control
	// connection stays open.
	UDPIdleTimeout Duration `json:"udpIdleTimeout,omitempty"`
}

// Defaults of the Config's timeouts.
const (
	DefaultHeaderTimeout         = 10 * time.Second
	DefaultDialTimeout           = 10 * time.Second
	DefaultResponseHeaderTimeout = 60 * time.Second
	DefaultIdleTimeout           = 10 * time.Minute
	// DefaultUDPIdleTimeout is Linux conntrack's timeout of a UDP flow
	// that has seen answers (nf_conntrack_udp_timeout_stream, 120 s): a
	// NAT in front of the client forgets its mapping about then, so an
	// association kept longer would relay to a port that no longer leads
	// to the client. QUIC's idle timeouts (30 s by default in most
	// stacks) and DNS fit well inside it.
	DefaultUDPIdleTimeout = 2 * time.Minute

	DefaultBodyIdleTimeout            = 60 * time.Second
	DefaultUnauthenticatedIdleTimeout = 5 * time.Second
)

// The default MaxConnections is (the soft RLIMIT_NOFILE −
// ReservedDescriptors) / DescriptorsPerConnection: a connection holds its
// client's socket, the destination's, and while bytes move one way a
// pipe (two descriptors) of the kernel's splice.
const (
	DescriptorsPerConnection = 4
	ReservedDescriptors      = 128
)

// Duration is a time.Duration written in JSON as Go writes it, "10s".
type Duration time.Duration

// MarshalText writes d as "1m30s".
func (d Duration) MarshalText() ([]byte, error) { return []byte(time.Duration(d).String()), nil }

// UnmarshalText reads "1m30s".
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return fmt.Errorf("vmconfig: %q is not a duration such as 10s: %w", b, err)
	}
	if v < 0 {
		return fmt.Errorf("vmconfig: duration %q is negative", b)
	}
	*d = Duration(v)
	return nil
}

// Or returns d, or def when d is zero.
func (d Duration) Or(def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return time.Duration(d)
}

// DefaultDenyDestinations are the ranges a proxy on a VM must never reach:
// the metadata server and link-local, RFC 1918, CGNAT, loopback, "this
// network", multicast and reserved space, the documentation and
// benchmarking ranges, IPv6 ULA and link-local (fd20:ce::254 is the
// metadata server's IPv6), IPv4-compatible (::/96, deprecated by RFC 4291
// §2.5.5.1, which holds :: and ::1 too), IPv4-mapped, NAT64 and 6to4 space (each a way back into IPv4
// ranges denied above), and Azure's wire server (168.63.129.16: a public
// address that every Azure VM reaches as its host's own endpoint, where
// the VM's provisioning reports and its goal state is read; it is also
// the VM's resolver there, which the filter lets the engine ask on port
// 53 as it lets a GCE VM ask the metadata server). The VM's nftables
// filter holds the same list in the kernel.
var DefaultDenyDestinations = []string{
	"0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "168.63.129.16/32", "169.254.0.0/16",
	"172.16.0.0/12", "192.0.0.0/24", "192.0.2.0/24", "192.88.99.0/24", "192.168.0.0/16",
	"198.18.0.0/15", "198.51.100.0/24", "203.0.113.0/24", "224.0.0.0/4", "240.0.0.0/4",
	"::/96", "::ffff:0:0/96", "64:ff9b::/96", "64:ff9b:1::/48", "2001:db8::/32",
	"2002::/16", "fc00::/7", "fe80::/10", "ff00::/8",
}

// User is one accepted credential: a username and the salted hash of its
// password. The password itself is never written to the VM's metadata or
// disk.
type User struct {
	Name string `json:"name"`
	// PasswordHash is HashPassword's output.
	PasswordHash string `json:"passwordHash"`
}

// HashScheme prefixes every PasswordHash, so another scheme can follow
// without ambiguity.
const HashScheme = "sha256"

// SaltLength is the bytes of salt NewPasswordHash draws.
const SaltLength = 16

// HashPassword returns "sha256:SALT:DIGEST", the salt and SHA-256(salt ||
// password) each in unpadded base64url. A fast hash suffices because every
// password is 128 or more random bits (internal/proxy.NewCredentials): no
// guess of one can be tried against its hash in any useful time, and a
// slow hash would cost each new connection its latency.
func HashPassword(password string, salt []byte) string {
	sum := sha256.Sum256(append(append([]byte{}, salt...), password...))
	enc := base64.RawURLEncoding
	return HashScheme + ":" + enc.EncodeToString(salt) + ":" + enc.EncodeToString(sum[:])
}

// NewPasswordHash hashes password with a fresh random salt.
func NewPasswordHash(password string) (string, error) {
	salt := make([]byte, SaltLength)
	if _, err := rand.Read(salt); err != nil {
		return "", fmt.Errorf("vmconfig: drawing a salt: %w", err)
	}
	return HashPassword(password, salt), nil
}

// Matches reports, in time independent of where they differ, whether
// password is the one hash was made from. A hash it cannot read matches
// nothing.
func Matches(hash, password string) bool {
	scheme, rest, ok := strings.Cut(hash, ":")
	if !ok || scheme != HashScheme {
		return false
	}
	saltText, _, ok := strings.Cut(rest, ":")
	if !ok {
		return false
	}
	salt, err := base64.RawURLEncoding.DecodeString(saltText)
	if err != nil {
		return false
	}
	return subtle.ConstantTimeCompare([]byte(HashPassword(password, salt)), []byte(hash)) == 1
}

// Stats are the engine's counters since it started, served at StatsListen
// and reported by the VM to the control plane.
type Stats struct {
	// Generation is the Config.Generation being served.
	Generation int64 `json:"generation"`
	// Since is when the engine started counting.
	Since time.Time `json:"since"`
	// BytesIn are the bytes received from clients; BytesOut those sent to
	// them.
	BytesIn  int64 `json:"bytesIn"`
	BytesOut int64 `json:"bytesOut"`
	// Connections are the client connections accepted; ActiveTunnels the
	// CONNECT tunnels open now.
	Connections   int64 `json:"connections"`
	ActiveTunnels int64 `json:"activeTunnels"`
	// ActiveConnections are the client connections open now, HTTP and
	// SOCKS5; Refused the connections closed or answered at once because
	// MaxConnections were open.
	ActiveConnections int64 `json:"activeConnections"`
	Refused           int64 `json:"refused"`
	// Requests counts what the clients asked for, by protocol: CONNECT
	// tunnels, plain-HTTP requests and SOCKS5 connections, each whether
	// carried or refused.
	Requests ProtocolCounts `json:"requests"`
	// Month is the calendar month (UTC, "2006-01") MonthBytes count; a
	// report of another month says nothing of this one.
	Month string `json:"month,omitempty"`
	// MonthBytes are the bytes carried in Month, both directions together,
	// by this engine and the ones before it on the VM (kept across
	// restarts): what Config.TrafficQuotaBytes bounds.
	MonthBytes int64 `json:"monthBytes"`
	// TrafficQuotaBytes is the quota served (Config.TrafficQuotaBytes); 0
	// is none.
	TrafficQuotaBytes int64 `json:"trafficQuotaBytes,omitempty"`
	// TrafficStop is the stop served (Config.TrafficStop), while it holds
	// (its month is the engine's month); nil is none.
	TrafficStop *TrafficStop `json:"trafficStop,omitempty"`
}

// TrafficStop is a stop of a proxy's traffic for the rest of a calendar
// month: its namespace's month reached its budget.
type TrafficStop struct {
	// Month is the month, UTC, "2006-01", the stop holds in.
	Month string `json:"month"`
	// Reason is the one-line why, for the engine's log and the status.
	Reason string `json:"reason,omitempty"`
}

// MonthCount is the bytes carried in a calendar month.
type MonthCount struct {
	// Month is the month, UTC, "2006-01".
	Month string `json:"month"`
	Bytes int64  `json:"bytes"`
}

// ProtocolCounts are counts by the protocol of a request.
type ProtocolCounts struct {
	HTTP    int64 `json:"http"`
	Connect int64 `json:"connect"`
	Socks5  int64 `json:"socks5"`
}

// Protocols of an AccessLine.
const (
	ProtocolHTTP    = "http"
	ProtocolConnect = "connect"
	ProtocolSocks5  = "socks5"
)

// AccessLine is the account of one CONNECT tunnel, SOCKS5 connection or
// plain-HTTP request: who, from where, to which host and port, with what
// answer, how many bytes and for how long. It names the destination by
// host and port only: never a path, a query or userinfo, which can carry
// secrets.
type AccessLine struct {
	// Time is when the engine accepted the request (for a tunnel, its
	// CONNECT or SOCKS5 greeting), End when its line was made: the
	// answer written, or the tunnel closed. Lines come in the order of
	// End, so a long tunnel's line follows lines of requests that started
	// after it.
	Time time.Time `json:"time"`
	End  time.Time `json:"end"`
	// Source is the client's address, host:port.
	Source string `json:"source"`
	// User is the authenticated user; empty if none was.
	User string `json:"user,omitempty"`
	// Session is the session ID the client named in its username
	// (USER-session-ID: internal/vm/engine reads it); "" without one. It is
	// recorded whatever Config.IPv6Egress is, so the log shows it even
	// where it changes nothing.
	Session string `json:"session"`
	// SourceAddress is the local address, host:port, of the connection
	// the engine made to the destination for this request: the VM's IPv4
	// address, or for an IPv6 destination the address IPv6Egress chose;
	// "" when no connection was made (a refusal, a failed dial) and on a
	// UDP association's line, whose datagrams leave from the kernel's
	// choice. It answers an abuse report's "who had this address, this
	// port, at that time".
	SourceAddress string `json:"sourceAddress"`
	// Protocol is ProtocolHTTP, ProtocolConnect or ProtocolSocks5: the
	// listener's, and on the HTTP one, CONNECT's whenever the request
	// line says CONNECT, even of a head the engine could not read.
	Protocol string `json:"protocol"`
	// Method is the HTTP method (CONNECT for a tunnel) or the SOCKS5
	// command ("CONNECT", "BIND", "UDP ASSOCIATE").
	Method string `json:"method,omitempty"`
	// Host and Port are the destination as the client named it (a name
	// or an address); empty when the request named none the engine could
	// read.
	Host string `json:"host,omitempty"`
	Port int    `json:"port,omitempty"`
	// Status is the HTTP status answered (200 for an open tunnel), or for
	// SOCKS5 the reply code (0 succeeded; for SOCKS4, its 0x5B); 0 when
	// nothing was answered (the client closed first, or its source is
	// not allowed).
	Status int `json:"status"`
	// BytesIn are the bytes the engine read from the client's connection
	// for this request, BytesOut those it wrote to it, whatever the
	// protocol: heads, bodies, answers (a refusal's included), SOCKS
	// handshakes and tunnel bytes alike; what an operator can reconcile
	// with the cloud's traffic bill, less TCP and IP headers.
	BytesIn  int64 `json:"bytesIn"`
	BytesOut int64 `json:"bytesOut"`
	// DurationMs is from the request to the end of its answer or tunnel.
	DurationMs int64 `json:"durationMs"`
	// Reason is why the request was refused or ended early, one of the
	// engine's short, stable reasons (the X-Egress-Error of an HTTP
	// answer); empty when it was carried to its end.
	Reason string `json:"reason,omitempty"`

	// The datagrams of a SOCKS5 UDP association (Method "UDP ASSOCIATE"),
	// all absent from other lines. DatagramsIn are the datagrams from the
	// client the engine sent on to their destination, DatagramsOut the
	// destinations' datagrams it relayed back; DatagramBytesIn and
	// DatagramBytesOut their bytes as the client's side carries them
	// (the SOCKS5 UDP header included), which BytesIn and BytesOut
	// include too. DatagramsDenied are the client's datagrams dropped
	// because their destination is denied (denyDestinations, or an
	// address with a zone); DatagramsFragmented those dropped because
	// they were fragments (FRAG not 0), which the engine never
	// reassembles; DatagramsDropped every other datagram dropped, either
	// way: a header the engine cannot read, a name that did not resolve,
	// a send that failed, a client sending faster than the relay could
	// take, or a datagram from an address the client never sent to.
	DatagramsIn         int64 `json:"datagramsIn,omitempty"`
	DatagramsOut        int64 `json:"datagramsOut,omitempty"`
	DatagramBytesIn     int64 `json:"datagramBytesIn,omitempty"`
	DatagramBytesOut    int64 `json:"datagramBytesOut,omitempty"`
	DatagramsDenied     int64 `json:"datagramsDenied,omitempty"`
	DatagramsFragmented int64 `json:"datagramsFragmented,omitempty"`
	DatagramsDropped    int64 `json:"datagramsDropped,omitempty"`
}

// AccessPageMax is the most lines one AccessPage holds: a reader that gets
// a full page asks again for the rest.
const AccessPageMax = 1000

// AccessPage is the answer of the stats listener's GET /access?after=SEQ:
// the lines after SEQ that the engine still holds, Next the SEQ to ask
// after next time, and Dropped how many lines after SEQ the engine let go
// because nobody read them in time (its ring holds the newest 4096): a
// count of this answer's, not a total since the engine started.
type AccessPage struct {
	Next    int64        `json:"next"`
	Dropped int64        `json:"dropped"`
	Lines   []AccessLine `json:"lines"`
}
