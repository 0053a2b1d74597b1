package provider

// ValidateRequest is what a spec asks of a provider, as the API checks it
// before anything is stored: the provider-neutral rules (a region is
// given, the port is a port) are the API's, and a provider's validator
// holds its own.
type ValidateRequest struct {
	Placement Placement
	// CloudInit is the spec's inline user-data, which the provider sends
	// the way its VMs read it (gcp: a metadata value, of bounded size).
	CloudInit string
	// Pool says the placement is a warm pool's: its VMs are claimed by
	// Reconfigure (provider.Reconfigurer), so a provider that cannot
	// reconfigure a VM refuses it.
	Pool bool
	// IPv6Prefix says the spec's ipv6Egress picks addresses of a routed
	// IPv6 prefix (perConnection, perSession). The API refuses it on a
	// provider type registered with no prefix (IPv6Prefix); a provider
	// whose VMs get one only under its own settings (gcp: a dual-stack
	// stack type) refuses it, with ReasonProviderNoIPv6Prefix, where they
	// get none.
	IPv6Prefix bool
}

// Violation is one rule of a provider that a request breaks.
type Violation struct {
	// Field is the JSON path of the field below the spec:
	// "placement.zone", "cloudInit".
	Field string
	// Reason names the rule in UPPER_SNAKE ("ZONE_NOT_IN_REGION"), one
	// reason per rule.
	Reason string
	// Description says what is wrong and what would be right.
	Description string
}

// The reasons a provider's Validator gives (Violation.Reason): one
// vocabulary across the clouds, since the API returns them and clients
// switch on them. A cloud without a rule's concept never gives its reason.
const (
	ReasonRegionInvalid             = "REGION_INVALID"
	ReasonRegionNotAllowed          = "REGION_NOT_ALLOWED"
	ReasonZoneNotInRegion           = "ZONE_NOT_IN_REGION"
	ReasonZoneNotAllowed            = "ZONE_NOT_ALLOWED"
	ReasonMachineTypeInvalid        = "MACHINE_TYPE_INVALID"
	ReasonMachineTypeNotAllowed     = "MACHINE_TYPE_NOT_ALLOWED"
	ReasonMachineTypeNotInRegion    = "MACHINE_TYPE_NOT_IN_REGION"
	ReasonImageInvalid              = "IMAGE_INVALID"
	ReasonImageNotAllowed           = "IMAGE_NOT_ALLOWED"
	ReasonCloudInitTooLarge         = "CLOUD_INIT_TOO_LARGE"
	ReasonProviderCannotReconfigure = "PROVIDER_CANNOT_RECONFIGURE"
	// ReasonProviderNoIPv6Prefix refuses an IPv6 egress that picks
	// addresses of a routed prefix (perConnection, perSession) on a
	// provider whose VMs get none (its registration's IPv6Prefix is 0).
	ReasonProviderNoIPv6Prefix = "PROVIDER_GIVES_NO_IPV6_PREFIX"
)

// Validator checks a request against a provider's rules: the forms its
// regions, zones, machine types and images take, its limits, and what the
// operator allows of it. It returns every broken rule, or none. It is
// pure: it calls no cloud, so the API can run it on every request.
type Validator func(ValidateRequest) []Violation

// Option changes a registration.
type Option func(*registration)

// WithValidator registers the provider type's rules beside its
// constructor.
func WithValidator(v Validator) Option { return func(r *registration) { r.validate = v } }

// InPlace registers that the provider type's VMs take a live change (a
// PATCH, new credentials) in place: its providers are Reconfigurers. The
// API, which constructs no provider, decides by it whether a live change
// makes a new VM, and so counts against its namespace's VMs; Set.Get
// refuses a provider registered so that is no Reconfigurer, whose every
// live change would make a VM no one counted.
func InPlace() Option { return func(r *registration) { r.inPlace = true } }

// IPv6Prefix registers the length of the routed IPv6 prefix the provider
// type's VMs get (64: a /64), which its Create asks for when
// CreateRequest.IPv6Prefix says so and its Get reports as
// Instance.IPv6Prefix. The API, which constructs no provider, refuses by
// it a spec whose IPv6 egress needs a prefix on a type that gives none,
// and defaults the egress by it. Not registered: none.
func IPv6Prefix(bits int) Option { return func(r *registration) { r.ipv6Prefix = bits } }

// registration is what the registry holds of a provider type.
type registration struct {
	ctor       Constructor
	perAccount AccountConstructor
	validate   Validator
	inPlace    bool
	ipv6Prefix int
}
