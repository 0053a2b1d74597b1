package proxy

import (
	"errors"
	"fmt"
	"net/netip"
	"regexp"
	"strings"
	"time"
)

// Limits of a spec that hold whatever the provider.
const (
	// MaxSourceRanges bounds allowedSourceRanges: a firewall rule takes at
	// most 5000, and a proxy list longer than this is a mistake.
	MaxSourceRanges = 256
	// MaxConnectPorts bounds connectPorts: a proxy for a few services, not
	// a way to open every port.
	MaxConnectPorts = 16
)

// FieldError is one broken rule: the field, as a JSON path
// ("spec.placement.zone"), what is wrong with it, and the rule's name.
type FieldError struct {
	Field       string `json:"field"`
	Description string `json:"description"`
	// Reason names the rule, in UPPER_SNAKE ("ZONE_NOT_IN_REGION"): one
	// reason per rule, the same wherever the rule is checked, so a client
	// can act on it without reading the description.
	Reason string `json:"reason,omitempty"`
	// Forbidden marks a feature the operator has not enabled (custom
	// cloud-init): the request is refused whatever its other fields say,
	// and the API answers 403 rather than 400.
	Forbidden bool `json:"-"`
}

// FieldErrors is every rule a request broke. It is an error.
type FieldErrors []FieldError

func (fe FieldErrors) Error() string {
	parts := make([]string, len(fe))
	for i, e := range fe {
		parts[i] = e.Field + ": " + e.Description
	}
	return strings.Join(parts, "; ")
}

// Forbidden returns the errors that refuse a feature, or nil.
func (fe FieldErrors) Forbidden() FieldErrors {
	var out FieldErrors
	for _, e := range fe {
		if e.Forbidden {
			out = append(out, e)
		}
	}
	return out
}

// The reasons of the provider-neutral rules.
const (
	ReasonNameInvalid             = "NAME_INVALID"
	ReasonProviderNotEnabled      = "PROVIDER_NOT_ENABLED"
	ReasonRegionRequired          = "REGION_REQUIRED"
	ReasonPortOutOfRange          = "PORT_OUT_OF_RANGE"
	ReasonPortNotOpen             = "PORT_NOT_OPEN"
	ReasonCloudInitAndSecret      = "CLOUD_INIT_AND_SECRET"
	ReasonCloudInitDisabled       = "CLOUD_INIT_DISABLED"
	ReasonCloudInitSecretDisabled = "CLOUD_INIT_SECRET_DISABLED"
	ReasonSecretVersionInvalid    = "SECRET_VERSION_INVALID"
	ReasonSecretOutsidePrefix     = "SECRET_OUTSIDE_PREFIX"
	ReasonSourceRangesRequired    = "SOURCE_RANGES_REQUIRED"
	ReasonSourceRangesTooMany     = "SOURCE_RANGES_TOO_MANY"
	ReasonSourceRangeInvalid      = "SOURCE_RANGE_INVALID"
	ReasonSourceRangeMapped       = "SOURCE_RANGE_IPV4_MAPPED"
	ReasonSourceRangeTooWide      = "SOURCE_RANGE_TOO_WIDE"
	ReasonSourceRangeNotOpen      = "SOURCE_RANGE_OUTSIDE_FIREWALL"
	ReasonIPPolicyInvalid         = "IP_POLICY_INVALID"
	ReasonMaxAgeInvalid           = "MAX_AGE_INVALID"
	ReasonMaxAgeTooShort          = "MAX_AGE_TOO_SHORT"
	ReasonConnectPortsTooMany     = "CONNECT_PORTS_TOO_MANY"
	ReasonConnectPortOutOfRange   = "CONNECT_PORT_OUT_OF_RANGE"
	ReasonConnectPortRepeated     = "CONNECT_PORT_REPEATED"
	ReasonSocks5PortIsPort        = "SOCKS5_PORT_SAME_AS_PORT"
	ReasonSocks5UDPWithoutPort    = "SOCKS5_UDP_WITHOUT_SOCKS5_PORT"
	ReasonIPv6EgressInvalid       = "IPV6_EGRESS_INVALID"
	ReasonBandwidthInvalid        = "BANDWIDTH_LIMIT_INVALID"
	ReasonBandwidthOutOfRange     = "BANDWIDTH_LIMIT_OUT_OF_RANGE"
	ReasonTrafficQuotaInvalid     = "TRAFFIC_QUOTA_INVALID"
	ReasonTrafficQuotaOutOfRange  = "TRAFFIC_QUOTA_OUT_OF_RANGE"
)

// Policy is what the operator lets every tenant ask for, whatever the
// provider (internal/app reads it from the environment). What a provider
// alone knows — its regions, machine types and images — is that
// provider's own policy, checked by the validator registered beside it.
type Policy struct {
	// MinPrefixIPv4 and MinPrefixIPv6 are the shortest prefix lengths, so
	// the widest ranges, allowedSourceRanges may hold: a /8 and a /32.
	MinPrefixIPv4, MinPrefixIPv6 int
	// AllowAnySource lets a range be the whole internet (0.0.0.0/0, ::/0).
	// Ranges wider than the minimum prefix and narrower than that stay
	// refused: /0 is a choice, a /3 is a typo.
	AllowAnySource bool
	// AllowCloudInit lets a spec bring its own cloudInit, user-data its VM
	// runs as root.
	AllowCloudInit bool
	// CloudInitSecretPrefix is what a spec's cloudInitSecret must start
	// with, projects/P/secrets/egress- (followed by the namespace and
	// SecretSeparator: a team names only its own secrets); empty refuses
	// cloudInitSecret.
	CloudInitSecretPrefix string
	// ProxyPorts are the ports the firewall opens on proxy VMs
	// (PROXY_PORTS, Terraform's proxy_ports): a proxy on any other port
	// would turn Ready, its self-test running over loopback, and no client
	// could reach it. None: DefaultPort alone.
	ProxyPorts []PortRange
	// FirewallSourceRanges are the sources the firewall lets reach those
	// ports (FIREWALL_SOURCE_RANGES, Terraform's allowed_source_ranges):
	// each of a spec's allowedSourceRanges must lie within them, for the
	// same reason. None: any source.
	FirewallSourceRanges []netip.Prefix
}

// Defaults of Policy.
const (
	DefaultMinPrefixIPv4 = 8
	DefaultMinPrefixIPv6 = 32
)

var secretVersionRE = regexp.MustCompile(`^projects/[^/]+/secrets/[A-Za-z0-9_-]{1,255}/versions/([0-9]+|latest)$`)

// IsSecretVersion reports whether s names a Secret Manager secret version,
// projects/PROJECT/secrets/SECRET/versions/VERSION.
func IsSecretVersion(s string) bool { return secretVersionRE.MatchString(s) }

// SecretSeparator ends the namespace in a secret's id. It is in every
// secret id's alphabet ([A-Za-z0-9_-]) and in no namespace name (a label),
// so the namespace a secret belongs to is exact: team's secrets are
// egress-team_…, and egress-team-prod_… is team-prod's alone. With '-',
// team could name team-prod's secrets, whose names start with egress-team-.
const SecretSeparator = "_"

// SecretPrefix is the prefix a namespace's cloudInitSecret must have under
// the operator's prefix.
func (pol Policy) SecretPrefix(namespace string) string {
	return pol.CloudInitSecretPrefix + namespace + SecretSeparator
}

// NamespaceSecret reports whether version is one of namespace's secrets
// under the prefix: the API's rule, and the reconciler's again before it
// reads one, whatever wrote the document. No prefix, no secret.
func (pol Policy) NamespaceSecret(namespace, version string) bool {
	return pol.CloudInitSecretPrefix != "" && IsLabel(namespace) && strings.HasPrefix(version, pol.SecretPrefix(namespace))
}

// ValidateName checks a resource name or namespace: an RFC 1123 label.
func ValidateName(field, v string) *FieldError {
	if !IsLabel(v) {
		return &FieldError{Field: field, Reason: ReasonNameInvalid,
			Description: fmt.Sprintf("%q is not an RFC 1123 label: 1-63 lowercase letters, digits or '-', starting and ending with a letter or digit", v)}
	}
	return nil
}

// Validate checks the provider-neutral rules of a spec whose defaults are
// filled in, for a proxy of namespace under the operator's policy, and
// returns every broken rule, or nil. enabled says whether a provider type
// is enabled. The placement's forms and the provider's own limits are the
// provider's validator's to check.
func (s Spec) Validate(namespace string, pol Policy, enabled func(string) bool) FieldErrors {
	var errs FieldErrors
	add := func(field, reason, format string, args ...any) {
		errs = append(errs, FieldError{Field: field, Reason: reason, Description: fmt.Sprintf(format, args...)})
	}
	if !enabled(s.Provider) {
		add("spec.provider", ReasonProviderNotEnabled, "provider type %q is not enabled here", s.Provider)
	}
	// A zone is optional: without one the provider picks one of the
	// region's. A region is what a user chooses a proxy for.
	if s.Placement.Region == "" {
		add("spec.placement.region", ReasonRegionRequired, "is required, e.g. us-central1")
	}
	if s.Port < 1 || s.Port > 65535 {
		add("spec.port", ReasonPortOutOfRange, "%d is outside 1-65535", s.Port)
	} else if !pol.PortOpen(s.Port) {
		add("spec.port", ReasonPortNotOpen, "%d is not a port the firewall opens to proxies (PROXY_PORTS: %s): no client could reach the proxy", s.Port, pol.portsText())
	}
	errs = append(errs, s.validateSocks5Port(pol)...)
	switch s.IPv6Egress {
	case "", IPv6Off, IPv6Single, IPv6PerConnection, IPv6PerSession:
	default:
		add("spec.ipv6Egress", ReasonIPv6EgressInvalid, "%q is none of %s, %s, %s, %s", s.IPv6Egress, IPv6Off, IPv6Single, IPv6PerConnection, IPv6PerSession)
	}
	if s.BandwidthLimit != "" {
		var be *BandwidthError
		if _, err := ParseBandwidth(s.BandwidthLimit); errors.As(err, &be) {
			add("spec.bandwidthLimit", be.Reason, "%q %s", s.BandwidthLimit, be.Description)
		}
	}
	if s.TrafficQuota != "" {
		var qe *TrafficQuotaError
		if _, err := ParseTrafficQuota(s.TrafficQuota); errors.As(err, &qe) {
			add("spec.trafficQuota", qe.Reason, "%q %s", s.TrafficQuota, qe.Description)
		}
	}
	errs = append(errs, s.validateCloudInit(namespace, pol)...)
	errs = append(errs, s.validateSourceRanges(pol)...)
	switch s.IPPolicy {
	case IPEphemeral, IPStatic:
	default:
		add("spec.ipPolicy", ReasonIPPolicyInvalid, "%q is neither %s nor %s", s.IPPolicy, IPEphemeral, IPStatic)
	}
	// How short a maxAge may be is the API's rule (ReasonMaxAgeTooShort):
	// it knows ROTATE_MIN_INTERVAL, the floor.
	if d, err := time.ParseDuration(s.MaxAge); s.MaxAge != "" && (err != nil || d <= 0) {
		add("spec.maxAge", ReasonMaxAgeInvalid, "%q is not a positive duration such as 24h", s.MaxAge)
	}
	if len(s.ConnectPorts) > MaxConnectPorts {
		add("spec.connectPorts", ReasonConnectPortsTooMany, "has %d ports, over the limit of %d", len(s.ConnectPorts), MaxConnectPorts)
	}
	seen := map[int32]bool{}
	for i, p := range s.ConnectPorts {
		switch {
		case p < 1 || p > 65535:
			add(fmt.Sprintf("spec.connectPorts[%d]", i), ReasonConnectPortOutOfRange, "%d is outside 1-65535", p)
		case seen[p]:
			add(fmt.Sprintf("spec.connectPorts[%d]", i), ReasonConnectPortRepeated, "%d is given twice", p)
		}
		seen[p] = true
	}
	return errs
}

// validateSocks5Port holds a SOCKS5 port to the rules of the proxy's own
// port (a port the firewall opens: else no client reaches it), and apart
// from it: one port serves one protocol. 0 asks for no SOCKS5, and then
// for no SOCKS5 UDP either.
func (s Spec) validateSocks5Port(pol Policy) FieldErrors {
	const field = "spec.socks5Port"
	p := s.Socks5Port
	switch {
	case p == 0 && s.Socks5UDP:
		return FieldErrors{{Field: "spec.socks5UDP", Reason: ReasonSocks5UDPWithoutPort, Description: "UDP ASSOCIATE is a SOCKS5 command: give the proxy a spec.socks5Port too"}}
	case p == 0:
		return nil
	case p < 1 || p > 65535:
		return FieldErrors{{Field: field, Reason: ReasonPortOutOfRange, Description: fmt.Sprintf("%d is outside 1-65535 (leave it out, or 0, for no SOCKS5)", p)}}
	case p == s.Port:
		return FieldErrors{{Field: field, Reason: ReasonSocks5PortIsPort, Description: fmt.Sprintf("%d is spec.port, which serves HTTP: give SOCKS5 a port of its own", p)}}
	case !pol.PortOpen(p):
		return FieldErrors{{Field: field, Reason: ReasonPortNotOpen,
			Description: fmt.Sprintf("%d is not a port the firewall opens to proxies (PROXY_PORTS: %s): no client could reach the proxy's SOCKS5", p, pol.portsText())}}
	}
	return nil
}

// validateCloudInit holds the operator's say over what a VM runs as root:
// inline cloud-init only when enabled, a secret only under the prefix and
// the namespace's own part of it.
func (s Spec) validateCloudInit(namespace string, pol Policy) FieldErrors {
	var errs FieldErrors
	if s.CloudInit != "" && !pol.AllowCloudInit {
		errs = append(errs, FieldError{Field: "spec.cloudInit", Reason: ReasonCloudInitDisabled, Forbidden: true,
			Description: "custom cloud-init is not enabled on this platform (ALLOW_CUSTOM_CLOUD_INIT): leave it out and the proxy gets the default bootstrap"})
	}
	if s.CloudInit != "" && s.CloudInitSecret != "" {
		errs = append(errs, FieldError{Field: "spec.cloudInitSecret", Reason: ReasonCloudInitAndSecret,
			Description: "cloudInit and cloudInitSecret are mutually exclusive: give one"})
	}
	switch v := s.CloudInitSecret; {
	case v == "":
	case pol.CloudInitSecretPrefix == "":
		errs = append(errs, FieldError{Field: "spec.cloudInitSecret", Reason: ReasonCloudInitSecretDisabled, Forbidden: true,
			Description: "cloud-init from Secret Manager is not enabled on this platform (CLOUD_INIT_SECRET_PREFIX is not set)"})
	case !IsSecretVersion(v):
		errs = append(errs, FieldError{Field: "spec.cloudInitSecret", Reason: ReasonSecretVersionInvalid,
			Description: fmt.Sprintf("%q is not a secret version: want projects/PROJECT/secrets/SECRET/versions/VERSION", v)})
	case !pol.NamespaceSecret(namespace, v):
		errs = append(errs, FieldError{Field: "spec.cloudInitSecret", Reason: ReasonSecretOutsidePrefix,
			Description: fmt.Sprintf("%q is outside this namespace's secrets: want %sNAME/versions/VERSION", v, pol.SecretPrefix(namespace))})
	}
	return errs
}

// validateSourceRanges: at least one range, each a CIDR no wider than the
// operator allows.
func (s Spec) validateSourceRanges(pol Policy) FieldErrors {
	var errs FieldErrors
	switch {
	case len(s.AllowedSourceRanges) == 0:
		errs = append(errs, FieldError{Field: "spec.allowedSourceRanges", Reason: ReasonSourceRangesRequired,
			Description: "is required: at least one CIDR that may use the proxy (an open proxy is abused within hours)"})
	case len(s.AllowedSourceRanges) > MaxSourceRanges:
		errs = append(errs, FieldError{Field: "spec.allowedSourceRanges", Reason: ReasonSourceRangesTooMany,
			Description: fmt.Sprintf("has %d ranges, over the limit of %d", len(s.AllowedSourceRanges), MaxSourceRanges)})
	}
	for i, r := range s.AllowedSourceRanges {
		field := fmt.Sprintf("spec.allowedSourceRanges[%d]", i)
		p, err := netip.ParsePrefix(r)
		min := pol.MinPrefixIPv4
		if err == nil && p.Addr().Is6() {
			min = pol.MinPrefixIPv6
		}
		before := len(errs)
		switch {
		case err != nil:
			errs = append(errs, FieldError{Field: field, Reason: ReasonSourceRangeInvalid, Description: fmt.Sprintf("%q is not a CIDR such as 203.0.113.0/24", r)})
		case p.Addr().Is4In6():
			errs = append(errs, FieldError{Field: field, Reason: ReasonSourceRangeMapped, Description: fmt.Sprintf("%q is an IPv4-mapped IPv6 prefix: give its IPv4 form", r)})
		case p.Bits() == 0 && pol.AllowAnySource:
		case p.Bits() == 0:
			errs = append(errs, FieldError{Field: field, Reason: ReasonSourceRangeTooWide,
				Description: fmt.Sprintf("%q opens the proxy to the whole internet, which this platform does not allow (ALLOW_ANY_SOURCE): name the networks that use it", r)})
		case p.Bits() < min:
			errs = append(errs, FieldError{Field: field, Reason: ReasonSourceRangeTooWide,
				Description: fmt.Sprintf("%q is wider than the /%d this platform allows", r, min)})
		}
		if len(errs) == before && !pol.withinFirewall(p) {
			errs = append(errs, FieldError{Field: field, Reason: ReasonSourceRangeNotOpen,
				Description: fmt.Sprintf("%q reaches beyond the sources the firewall lets in (FIREWALL_SOURCE_RANGES: %s): clients there could never reach the proxy", r, pol.firewallText())})
		}
	}
	return errs
}

// WithDefaults fills in what a request may leave out: the provider, the
// port (Policy.DefaultPort), the IP policy and the access log (on).
func (s Spec) WithDefaults(defaultProvider string, defaultPort int32) Spec {
	if s.Provider == "" {
		s.Provider = defaultProvider
	}
	if s.Port == 0 {
		s.Port = defaultPort
	}
	if s.IPPolicy == "" {
		s.IPPolicy = IPEphemeral
	}
	if s.AccessLog == nil {
		on := true
		s.AccessLog = &on
	}
	return s
}
