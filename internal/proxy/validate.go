package proxy

import (
	"fmt"
	"net/netip"
	"regexp"
	"strings"
	"time"
)

// Limits of a spec.
const (
	// MaxCloudInitBytes is the GCE limit on one metadata value, where the
	// user-data goes.
	MaxCloudInitBytes = 256 << 10
	// MaxSourceRanges bounds allowedSourceRanges: a firewall rule takes at
	// most 5000, and a proxy list longer than this is a mistake.
	MaxSourceRanges = 256
	// MaxConnectPorts bounds connectPorts: a proxy for a few services, not
	// a way to open every port.
	MaxConnectPorts = 16
)

// FieldError is one broken rule: the field, as a JSON path
// ("spec.placement.zone"), and what is wrong with it.
type FieldError struct {
	Field       string `json:"field"`
	Description string `json:"description"`
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

var (
	regionRE      = regexp.MustCompile(`^[a-z]+(-[a-z]+)+[0-9]+$`)
	zoneSuffixRE  = regexp.MustCompile(`^-[a-z]$`)
	machineTypeRE = regexp.MustCompile(`^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$`)
	// An image by project path (projects/P/global/images/NAME or
	// .../images/family/FAMILY), optionally as a full Compute API URL.
	imageRE         = regexp.MustCompile(`^(https://www\.googleapis\.com/compute/v1/)?projects/[a-z][-a-z0-9.:]{0,62}/global/images/(family/)?[a-z]([-a-z0-9]{0,61}[a-z0-9])?$`)
	secretVersionRE = regexp.MustCompile(`^projects/[^/]+/secrets/[A-Za-z0-9_-]{1,255}/versions/([0-9]+|latest)$`)
)

// ValidateName checks a resource name or namespace: an RFC 1123 label.
func ValidateName(field, v string) *FieldError {
	if !IsLabel(v) {
		return &FieldError{field, fmt.Sprintf("%q is not an RFC 1123 label: 1-63 lowercase letters, digits or '-', starting and ending with a letter or digit", v)}
	}
	return nil
}

// Validate checks a spec whose defaults are filled in and returns every
// broken rule, or nil. knownProvider says whether a provider type is
// configured.
func (s Spec) Validate(knownProvider func(string) bool) FieldErrors {
	var errs FieldErrors
	add := func(field, format string, args ...any) {
		errs = append(errs, FieldError{Field: field, Description: fmt.Sprintf(format, args...)})
	}
	if !knownProvider(s.Provider) {
		add("spec.provider", "provider type %q is not configured", s.Provider)
	}
	pl := s.Placement
	switch {
	case pl.Region == "":
		add("spec.placement.region", "is required, e.g. us-central1")
	case !regionRE.MatchString(pl.Region):
		add("spec.placement.region", "%q is not a region name such as us-central1", pl.Region)
	}
	// A zone is optional: without one the provider picks one of the
	// region's, and moves to another when one is out of capacity.
	if pl.Zone != "" && pl.Region != "" && !(strings.HasPrefix(pl.Zone, pl.Region) && zoneSuffixRE.MatchString(strings.TrimPrefix(pl.Zone, pl.Region))) {
		add("spec.placement.zone", "zone %q is not in region %q: want %s-a, %s-b, …", pl.Zone, pl.Region, pl.Region, pl.Region)
	}
	if pl.MachineType != "" && !machineTypeRE.MatchString(pl.MachineType) {
		add("spec.placement.machineType", "%q is not a machine type name such as e2-micro", pl.MachineType)
	}
	if pl.Image != "" && !imageRE.MatchString(pl.Image) {
		add("spec.placement.image", "%q is not an image: want projects/PROJECT/global/images/NAME or projects/PROJECT/global/images/family/FAMILY", pl.Image)
	}
	if s.Port < 1 || s.Port > 65535 {
		add("spec.port", "%d is outside 1-65535", s.Port)
	}
	if n := len(s.CloudInit); n > MaxCloudInitBytes {
		add("spec.cloudInit", "is %d bytes, over the %d-byte limit of a GCE metadata value", n, MaxCloudInitBytes)
	}
	if s.CloudInit != "" && s.CloudInitSecret != "" {
		add("spec.cloudInitSecret", "cloudInit and cloudInitSecret are mutually exclusive: give one")
	}
	if s.CloudInitSecret != "" && !secretVersionRE.MatchString(s.CloudInitSecret) {
		add("spec.cloudInitSecret", "%q is not a secret version: want projects/PROJECT/secrets/SECRET/versions/VERSION", s.CloudInitSecret)
	}
	switch {
	case len(s.AllowedSourceRanges) == 0:
		add("spec.allowedSourceRanges", "is required: at least one CIDR that may use the proxy (an open proxy is abused within hours)")
	case len(s.AllowedSourceRanges) > MaxSourceRanges:
		add("spec.allowedSourceRanges", "has %d ranges, over the limit of %d", len(s.AllowedSourceRanges), MaxSourceRanges)
	}
	for i, r := range s.AllowedSourceRanges {
		p, err := netip.ParsePrefix(r)
		switch {
		case err != nil:
			add(fmt.Sprintf("spec.allowedSourceRanges[%d]", i), "%q is not a CIDR such as 203.0.113.0/24", r)
		case p.Addr().Is4In6():
			add(fmt.Sprintf("spec.allowedSourceRanges[%d]", i), "%q is an IPv4-mapped IPv6 prefix: give its IPv4 form", r)
		}
	}
	switch s.IPPolicy {
	case IPEphemeral, IPStatic:
	default:
		add("spec.ipPolicy", "%q is neither %s nor %s", s.IPPolicy, IPEphemeral, IPStatic)
	}
	if s.MaxAge != "" {
		if d, err := time.ParseDuration(s.MaxAge); err != nil {
			add("spec.maxAge", "%q is not a duration such as 24h", s.MaxAge)
		} else if d < MinMaxAge {
			add("spec.maxAge", "%s is shorter than the %s a VM must serve at the least", d, MinMaxAge)
		}
	}
	if len(s.ConnectPorts) > MaxConnectPorts {
		add("spec.connectPorts", "has %d ports, over the limit of %d", len(s.ConnectPorts), MaxConnectPorts)
	}
	seen := map[int32]bool{}
	for i, p := range s.ConnectPorts {
		switch {
		case p < 1 || p > 65535:
			add(fmt.Sprintf("spec.connectPorts[%d]", i), "%d is outside 1-65535", p)
		case seen[p]:
			add(fmt.Sprintf("spec.connectPorts[%d]", i), "%d is given twice", p)
		}
		seen[p] = true
	}
	return errs
}

// WithDefaults fills in what a request may leave out: the provider, the
// port and the IP policy.
func (s Spec) WithDefaults(defaultProvider string) Spec {
	if s.Provider == "" {
		s.Provider = defaultProvider
	}
	if s.Port == 0 {
		s.Port = DefaultPort
	}
	if s.IPPolicy == "" {
		s.IPPolicy = IPEphemeral
	}
	return s
}
