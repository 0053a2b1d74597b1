package engine

import (
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/egress-proxies/egress/internal/vm/vmconfig"
)

// rules is a vmconfig.Config checked and in the form each request reads: one value,
// swapped whole by a reload, so a request sees either the old rules or the
// new ones, never half of each.
type rules struct {
	generation int64
	users      map[string]string // name → PasswordHash
	sources    []netip.Prefix
	ports      map[int]bool
	deny       []netip.Prefix
	allow      []netip.Prefix

	dialTimeout, idleTimeout    time.Duration
	bodyIdleTimeout, unauthIdle time.Duration
	headerTimeout               time.Duration
	responseHeaderTimeout       time.Duration
	bandwidth                   int64                 // bits a second, 0 unlimited
	trafficQuota                int64                 // bytes a month, 0 unlimited
	trafficStop                 *vmconfig.TrafficStop // budget.go; nil none
	accessLog                   bool
	// udp is whether a SOCKS5 UDP ASSOCIATE is carried (udp.go), and
	// udpIdle how long an association may carry nothing.
	udp     bool
	udpIdle time.Duration
	// status is who may read the status on the proxy port; nil: nobody.
	status *statusAccess
	// ipv6Egress is how a connection to an IPv6 destination picks its
	// source (source.go), from ipv6Prefix.
	ipv6Egress string
	ipv6Prefix netip.Prefix
}

// compile checks c and returns its rules. An error names the field and the
// value.
func compile(c vmconfig.Config) (*rules, error) {
	r := &rules{
		generation:  c.Generation,
		users:       map[string]string{},
		ports:       map[int]bool{},
		dialTimeout: c.DialTimeout.Or(vmconfig.DefaultDialTimeout),
		idleTimeout: c.IdleTimeout.Or(vmconfig.DefaultIdleTimeout),

		bodyIdleTimeout:       c.BodyIdleTimeout.Or(vmconfig.DefaultBodyIdleTimeout),
		unauthIdle:            c.UnauthenticatedIdleTimeout.Or(vmconfig.DefaultUnauthenticatedIdleTimeout),
		headerTimeout:         c.HeaderTimeout.Or(vmconfig.DefaultHeaderTimeout),
		responseHeaderTimeout: c.ResponseHeaderTimeout.Or(vmconfig.DefaultResponseHeaderTimeout),
		bandwidth:             c.BandwidthBitsPerSecond,
		trafficQuota:          c.TrafficQuotaBytes,
		accessLog:             c.AccessLog,
		udp:                   c.Socks5UDP,
		udpIdle:               c.UDPIdleTimeout.Or(vmconfig.DefaultUDPIdleTimeout),
	}
	if c.BandwidthBitsPerSecond < 0 {
		return nil, fmt.Errorf("engine: bandwidthBitsPerSecond: %d is negative (0 is no limit)", c.BandwidthBitsPerSecond)
	}
	if c.TrafficQuotaBytes < 0 {
		return nil, fmt.Errorf("engine: trafficQuotaBytes: %d is negative (0 is no quota)", c.TrafficQuotaBytes)
	}
	if err := checkStop(c.TrafficStop); err != nil {
		return nil, err
	}
	if c.TrafficStop != nil {
		st := *c.TrafficStop
		r.trafficStop = &st
	}
	if c.MaxConnections < 0 {
		return nil, fmt.Errorf("engine: maxConnections: %d is negative (0 sizes it to the descriptor limit)", c.MaxConnections)
	}
	if c.Socks5Listen != "" {
		if _, _, err := net.SplitHostPort(c.Socks5Listen); err != nil {
			return nil, fmt.Errorf("engine: socks5Listen %q is not host:port: %w", c.Socks5Listen, err)
		}
		if c.Socks5Listen == c.Listen {
			return nil, fmt.Errorf("engine: socks5Listen %q is listen's address too", c.Socks5Listen)
		}
	}
	if c.Socks5UDP && c.Socks5Listen == "" {
		return nil, errors.New("engine: socks5UDP: true without socks5Listen: UDP ASSOCIATE is a SOCKS5 command, and SOCKS5 is off")
	}
	// Only a warm pool's VM, generation 0, serves no one: it is proven and
	// waits to be claimed. A proxy's configuration without users is a
	// mistake.
	if len(c.Users) == 0 && c.Generation != 0 {
		return nil, fmt.Errorf("engine: users: none at generation %d, so the proxy would serve nobody (only generation 0, a warm pool's VM, may have none)", c.Generation)
	}
	for i, u := range c.Users {
		if u.Name == "" || strings.ContainsAny(u.Name, ":\r\n") {
			return nil, fmt.Errorf("engine: users[%d]: name %q is empty or holds ':' or a line break", i, u.Name)
		}
		if scheme, _, _ := strings.Cut(u.PasswordHash, ":"); scheme != vmconfig.HashScheme || strings.Count(u.PasswordHash, ":") != 2 {
			return nil, fmt.Errorf("engine: users[%d] (%s): passwordHash is not %s:SALT:DIGEST (HashPassword's form)", i, u.Name, vmconfig.HashScheme)
		}
		if _, dup := r.users[u.Name]; dup {
			return nil, fmt.Errorf("engine: users[%d]: %s is named twice", i, u.Name)
		}
		r.users[u.Name] = u.PasswordHash
	}
	var err error
	if r.sources, err = prefixes("allowedSourceRanges", c.AllowedSourceRanges); err != nil {
		return nil, err
	}
	if len(r.sources) == 0 && c.Generation != 0 {
		return nil, fmt.Errorf("engine: allowedSourceRanges: none at generation %d, so the proxy would serve nobody (only generation 0, a warm pool's VM, may have none)", c.Generation)
	}
	if len(c.ConnectPorts) == 0 {
		return nil, errors.New("engine: connectPorts: none, so no request could go anywhere")
	}
	for _, p := range c.ConnectPorts {
		if p < 1 || p > 65535 {
			return nil, fmt.Errorf("engine: connectPorts: %d is outside 1-65535", p)
		}
		r.ports[p] = true
	}
	if r.deny, err = prefixes("denyDestinations", c.DenyDestinations); err != nil {
		return nil, err
	}
	if r.allow, err = prefixes("allowDestinations", c.AllowDestinations); err != nil {
		return nil, err
	}
	if r.ipv6Prefix, err = vmconfig.CheckIPv6Egress(c.IPv6Prefix, c.IPv6Egress); err != nil {
		return nil, fmt.Errorf("engine: %w", err)
	}
	r.ipv6Egress = c.IPv6Egress
	if r.status, err = compileStatus(c.Status); err != nil {
		return nil, err
	}
	if r.status != nil && r.users[r.status.name] != "" {
		return nil, fmt.Errorf("engine: status.user %s is a proxy user too: the status credential must carry nothing", r.status.name)
	}
	return r, nil
}

// prefixes parses CIDRs, IPv4-mapped IPv6 ones in their IPv4 form.
func prefixes(field string, cidrs []string) ([]netip.Prefix, error) {
	out := make([]netip.Prefix, 0, len(cidrs))
	for _, s := range cidrs {
		p, err := netip.ParsePrefix(strings.TrimSpace(s))
		if err != nil {
			return nil, fmt.Errorf("engine: %s: %q is not a CIDR: %w", field, s, err)
		}
		out = append(out, p.Masked())
	}
	return out, nil
}

func contains(ps []netip.Prefix, a netip.Addr) bool {
	return slices.ContainsFunc(ps, func(p netip.Prefix) bool { return p.Contains(a) })
}

// sourceAllowed reports whether a client at addr may use the proxy.
func (r *rules) sourceAllowed(addr netip.Addr) bool {
	return contains(r.sources, addr.Unmap())
}

// destinationAllowed reports whether the proxy may connect to addr: not in
// a denied range, or in an allowed one.
func (r *rules) destinationAllowed(addr netip.Addr) bool {
	addr = addr.Unmap()
	return !contains(r.deny, addr) || contains(r.allow, addr)
}

// errUnauthorized is a request without credentials, or with credentials
// the proxy does not hold: the same answer for both, 407, so a client
// prompts for credentials instead of blaming the site.
var errUnauthorized = errors.New("no valid Proxy-Authorization")

// credential is who a connection authenticated as: the user's name, the
// session ID it named (USER-session-ID; source.go), the hash its password
// matched and the password itself, kept in memory for
// the connection's life (never logged): the control plane salts a hash
// afresh each time it renders a configuration, so only the password can
// tell a new hash of the same password (a PATCH of the ranges) from a
// rotation. A configuration under which the name and password no longer
// match revokes it.
type credential struct {
	name, session, hash, password string
}

// authorize checks a Proxy-Authorization header value and returns the
// user it names.
func (r *rules) authorize(header string) (credential, error) {
	name, password, ok := parseBasic(header)
	if !ok {
		return credential{}, errUnauthorized
	}
	return r.check(name, password)
}

// check checks a username and password (Basic's or SOCKS5's). A username
// is a user's whole name first; only a name no user has is read as
// USER-session-ID (parseSessionUsername), USER's password checked as
// USER's, under the same rules: so a user whose own name holds
// "-session-" still authenticates plainly by it, and with a session by
// its name, "-session-" and the ID.
func (r *rules) check(name, password string) (credential, error) {
	session := ""
	hash, known := r.users[name]
	if !known {
		if user, id, ok := parseSessionUsername(name); ok {
			name, session = user, id
			hash, known = r.users[name]
		}
	}
	if !known {
		// Hash anyway, so a wrong name costs what a wrong password does.
		vmconfig.Matches(unknownUserHash, password)
		return credential{}, errUnauthorized
	}
	if !vmconfig.Matches(hash, password) {
		return credential{}, errUnauthorized
	}
	return credential{name: name, session: session, hash: hash, password: password}, nil
}

// holds reports whether c is still a credential of these rules.
func (r *rules) holds(c credential) bool {
	hash, ok := r.users[c.name]
	return ok && c.name != "" && (hash == c.hash || vmconfig.Matches(hash, c.password))
}

// unknownUserHash is what a password of an unknown user is checked
// against: it matches nothing anyone sends.
var unknownUserHash = vmconfig.HashPassword("\x00", make([]byte, vmconfig.SaltLength))

// parseBasic decodes "Basic base64(user:password)", the scheme's name in
// any case (RFC 7617).
func parseBasic(header string) (user, password string, ok bool) {
	scheme, token, found := strings.Cut(strings.TrimSpace(header), " ")
	if !found || !strings.EqualFold(scheme, "Basic") {
		return "", "", false
	}
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(token))
	if err != nil {
		return "", "", false
	}
	user, password, ok = strings.Cut(string(raw), ":")
	if !ok || user == "" {
		return "", "", false
	}
	return user, password, true
}

// target parses a request's destination, host:port, and checks its port;
// defaultPort fills a missing one (80 for plain http).
func (r *rules) target(hostport string, defaultPort int) (host string, port int, err error) {
	host, port, err = splitTarget(hostport, defaultPort)
	if err != nil {
		return "", 0, err
	}
	if !r.ports[port] {
		return "", 0, refusef(ansPortNotAllowed, "destination %q", hostport)
	}
	return host, port, nil
}

// splitTarget reads host:port (a name, an IPv4 address or a bracketed
// IPv6 one); defaultPort fills a missing port, or 0 requires one. A zone
// ID, escaped or not, is refused here, before any range is checked: netip
// finds a zoned address in no range, and Linux ignores the zone of an
// address that is not link-local, so [::1%25x] would reach ::1.
func splitTarget(hostport string, defaultPort int) (host string, port int, err error) {
	if strings.Contains(hostport, "%") {
		return "", 0, refusef(ansZoneNotAllowed, "destination %q", hostport)
	}
	host, portText, err := net.SplitHostPort(hostport)
	if err != nil {
		if defaultPort == 0 || strings.HasSuffix(hostport, ":") {
			return "", 0, refusef(ansBadTarget, "destination %q is not host:port: %w", hostport, err)
		}
		host, portText = strings.TrimSuffix(strings.TrimPrefix(hostport, "["), "]"), strconv.Itoa(defaultPort)
	}
	port, err = strconv.Atoi(portText)
	if err != nil || port < 1 || port > 65535 || strings.HasPrefix(portText, "+") {
		return "", 0, refusef(ansBadTarget, "destination %q: port %q is not 1-65535", hostport, portText)
	}
	if !validHost(host) {
		return "", 0, refusef(ansBadTarget, "destination %q has no host this proxy can name", hostport)
	}
	return host, port, nil
}

// validHost reports whether host is an IP address without a zone or a
// DNS name (letters, digits, hyphens, underscores and dots, at most 253
// bytes): the only hosts the engine dials, and the only text of a
// destination an access line holds.
func validHost(host string) bool {
	if host == "" || len(host) > 253 {
		return false
	}
	if a, err := netip.ParseAddr(host); err == nil {
		return a.Zone() == ""
	}
	for i := 0; i < len(host); i++ {
		c := host[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '.' || c == '_') {
			return false
		}
	}
	return true
}
