package httpapi_test

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/internal/proxy"
	"github.com/egress-proxies/egress/internal/store/storefake"
)

// TestBadInput: each malformed request gets the 4xx that names the field
// and the rule, as an editor of the namespace would see it, and writes
// nothing. It runs on the in-memory store, which passes the Firestore
// store's contract: nothing here needs the emulator.
func TestBadInput(t *testing.T) {
	e := memEnv(t)
	e.seed()
	before := snapshot(t, e)
	const coll = "/v1/namespaces/team-a/proxies"
	spec := func(mut string) string { // goodSpec with extra or replaced members
		return `{"placement":{"region":"us-central1","zone":"us-central1-a"},"allowedSourceRanges":["203.0.113.0/24"],` + mut + `}`
	}
	placement := func(pl string) string {
		return `{"placement":` + pl + `,"allowedSourceRanges":["203.0.113.0/24"]}`
	}
	cases := map[string]struct {
		reason                          string
		method, path, contentType, body string
		code                            int
		status, field, errReason        string
	}{
		"BodyNotJSON":         {reason: "a body cut short", body: `{"name":`, code: 400, status: "INVALID_ARGUMENT", field: "body", errReason: "BODY_NOT_JSON"},
		"BodyEmpty":           {reason: "no body at all", body: "", contentType: "application/json", code: 400, status: "INVALID_ARGUMENT", field: "body", errReason: "BODY_NOT_JSON"},
		"BodyTwoValues":       {reason: "one object and no more", body: body("a", goodSpec) + `{}`, code: 400, status: "INVALID_ARGUMENT", field: "body", errReason: "BODY_NOT_JSON"},
		"BodyTrailingBytes":   {reason: "nothing after the object", body: body("a", goodSpec) + ` x`, code: 400, status: "INVALID_ARGUMENT", field: "body", errReason: "BODY_NOT_JSON"},
		"BodyTooLarge":        {reason: "1 MiB at most", body: body("big", spec(`"cloudInit":"`+strings.Repeat("x", 1<<20)+`"`)), code: 413, status: "INVALID_ARGUMENT", field: "body", errReason: "BODY_TOO_LARGE"},
		"UnknownTopField":     {reason: "an unknown member is named", body: `{"name":"a","spec":` + goodSpec + `,"color":"red"}`, code: 400, status: "INVALID_ARGUMENT", field: "color", errReason: "FIELD_UNKNOWN"},
		"UnknownSpecField":    {reason: "an unknown member is named by its full path", body: body("a", spec(`"size":"xl"`)), code: 400, status: "INVALID_ARGUMENT", field: "spec.size", errReason: "FIELD_UNKNOWN"},
		"UnknownDeepField":    {reason: "in a nested object too", body: body("a", placement(`{"region":"us-central1","flavour":"x"}`)), code: 400, status: "INVALID_ARGUMENT", field: "spec.placement.flavour", errReason: "FIELD_UNKNOWN"},
		"FieldWrongCase":      {reason: "field names are exact: Go's decoder would take Name for name", body: `{"Name":"a","spec":` + goodSpec + `}`, code: 400, status: "INVALID_ARGUMENT", field: "Name", errReason: "FIELD_UNKNOWN"},
		"NameWrongType":       {reason: "a number for a string", body: `{"name":7,"spec":` + goodSpec + `}`, code: 400, status: "INVALID_ARGUMENT", field: "name", errReason: "FIELD_WRONG_TYPE"},
		"PortWrongType":       {reason: "a string for a number", body: body("a", spec(`"port":"3128"`)), code: 400, status: "INVALID_ARGUMENT", field: "spec.port", errReason: "FIELD_WRONG_TYPE"},
		"PortOverflowsInt32":  {reason: "a number out of the type's range", body: body("a", spec(`"port":99999999999`)), code: 400, status: "INVALID_ARGUMENT", field: "spec.port", errReason: "FIELD_WRONG_TYPE"},
		"RangesWrongType":     {reason: "a string for a list", body: `{"name":"a","spec":{"placement":{"region":"us-central1"},"allowedSourceRanges":"203.0.113.0/24"}}`, code: 400, status: "INVALID_ARGUMENT", field: "spec.allowedSourceRanges", errReason: "FIELD_WRONG_TYPE"},
		"WrongContentType":    {reason: "JSON only", contentType: "text/plain", body: body("a", goodSpec), code: 415, status: "INVALID_ARGUMENT", errReason: "CONTENT_TYPE_UNSUPPORTED"},
		"NameMissing":         {reason: "a proxy needs a name", body: `{"spec":` + goodSpec + `}`, code: 400, status: "INVALID_ARGUMENT", field: "name", errReason: proxy.ReasonNameInvalid},
		"NameUppercase":       {reason: "names are labels", body: body("Egress", goodSpec), code: 400, status: "INVALID_ARGUMENT", field: "name", errReason: proxy.ReasonNameInvalid},
		"NameTooLong":         {reason: "63 characters at most", body: body(strings.Repeat("a", 64), goodSpec), code: 400, status: "INVALID_ARGUMENT", field: "name", errReason: proxy.ReasonNameInvalid},
		"NameTrailingDash":    {reason: "no dash at the end", body: body("egress-", goodSpec), code: 400, status: "INVALID_ARGUMENT", field: "name", errReason: proxy.ReasonNameInvalid},
		"NamespaceNotLabel":   {reason: "a path that names no namespace", path: "/v1/namespaces/Team_A/proxies", body: body("a", goodSpec), code: 400, status: "INVALID_ARGUMENT", field: "namespace", errReason: proxy.ReasonNameInvalid},
		"RegionMissing":       {reason: "a region is what a proxy is for", body: body("a", placement(`{"zone":"us-central1-a"}`)), code: 400, status: "INVALID_ARGUMENT", field: "spec.placement.region", errReason: proxy.ReasonRegionRequired},
		"ZoneOutsideRegion":   {reason: "the mock's own rule: a zone of the region", body: body("a", placement(`{"region":"us-central1","zone":"europe-west4-a"}`)), code: 400, status: "INVALID_ARGUMENT", field: "spec.placement.zone", errReason: "ZONE_NOT_IN_REGION"},
		"IPPolicyUnknown":     {reason: "Ephemeral or Static", body: body("a", spec(`"ipPolicy":"Sticky"`)), code: 400, status: "INVALID_ARGUMENT", field: "spec.ipPolicy", errReason: proxy.ReasonIPPolicyInvalid},
		"MaxAgeNotDuration":   {reason: "a Go duration", body: body("a", spec(`"maxAge":"a day"`)), code: 400, status: "INVALID_ARGUMENT", field: "spec.maxAge", errReason: proxy.ReasonMaxAgeInvalid},
		"MaxAgeTooShort":      {reason: "ten minutes at least", body: body("a", spec(`"maxAge":"5m"`)), code: 400, status: "INVALID_ARGUMENT", field: "spec.maxAge", errReason: proxy.ReasonMaxAgeTooShort},
		"PortNegative":        {reason: "a port is 1-65535", body: body("a", spec(`"port":-1`)), code: 400, status: "INVALID_ARGUMENT", field: "spec.port", errReason: proxy.ReasonPortOutOfRange},
		"PortTooHigh":         {reason: "a port is 1-65535", body: body("a", spec(`"port":65536`)), code: 400, status: "INVALID_ARGUMENT", field: "spec.port", errReason: proxy.ReasonPortOutOfRange},
		"CIDRMalformed":       {reason: "every range parses", body: body("a", `{"placement":{"region":"us-central1"},"allowedSourceRanges":["10.0.0.0/8","10.0.0.300/32"]}`), code: 400, status: "INVALID_ARGUMENT", field: "spec.allowedSourceRanges[1]", errReason: proxy.ReasonSourceRangeInvalid},
		"CIDRMissing":         {reason: "an open proxy is abused within hours", body: body("a", `{"placement":{"region":"us-central1"}}`), code: 400, status: "INVALID_ARGUMENT", field: "spec.allowedSourceRanges", errReason: proxy.ReasonSourceRangesRequired},
		"CIDRMappedIPv6":      {reason: "an IPv4 range in IPv6 clothing", body: body("a", `{"placement":{"region":"us-central1"},"allowedSourceRanges":["::ffff:10.0.0.0/104"]}`), code: 400, status: "INVALID_ARGUMENT", field: "spec.allowedSourceRanges[0]", errReason: proxy.ReasonSourceRangeMapped},
		"UnknownProvider":     {reason: "only enabled providers", body: body("a", spec(`"provider":"azure"`)), code: 400, status: "INVALID_ARGUMENT", field: "spec.provider", errReason: proxy.ReasonProviderNotEnabled},
		"ConnectPortZero":     {reason: "a CONNECT port is a port", body: body("a", spec(`"connectPorts":[443,0]`)), code: 400, status: "INVALID_ARGUMENT", field: "spec.connectPorts[1]", errReason: proxy.ReasonConnectPortOutOfRange},
		"ConnectPortTwice":    {reason: "each port once", body: body("a", spec(`"connectPorts":[443,443]`)), code: 400, status: "INVALID_ARGUMENT", field: "spec.connectPorts[1]", errReason: proxy.ReasonConnectPortRepeated},
		"Socks5PortIsPort":    {reason: "SOCKS5 on a port of its own", body: body("a", spec(`"socks5Port":3128`)), code: 400, status: "INVALID_ARGUMENT", field: "spec.socks5Port", errReason: proxy.ReasonSocks5PortIsPort},
		"Socks5PortNotOpen":   {reason: "a port the firewall opens, as spec.port", body: body("a", spec(`"socks5Port":1080`)), code: 400, status: "INVALID_ARGUMENT", field: "spec.socks5Port", errReason: proxy.ReasonPortNotOpen},
		"Socks5PortTooHigh":   {reason: "a port is 1-65535", body: body("a", spec(`"socks5Port":70000`)), code: 400, status: "INVALID_ARGUMENT", field: "spec.socks5Port", errReason: proxy.ReasonPortOutOfRange},
		"IPv6EgressUnknown":   {reason: "off, single, perConnection or perSession", body: body("a", spec(`"ipv6Egress":"random"`)), code: 400, status: "INVALID_ARGUMENT", field: "spec.ipv6Egress", errReason: proxy.ReasonIPv6EgressInvalid},
		"IPv6PerConnNoPrefix": {reason: "the mock's VMs get no IPv6 prefix: refused at the API, not at boot", body: body("a", spec(`"ipv6Egress":"perConnection"`)), code: 400, status: "INVALID_ARGUMENT", field: "spec.ipv6Egress", errReason: "PROVIDER_GIVES_NO_IPV6_PREFIX"},
		"IPv6PerSessNoPrefix": {reason: "perSession picks from the prefix too", body: body("a", spec(`"ipv6Egress":"perSession"`)), code: 400, status: "INVALID_ARGUMENT", field: "spec.ipv6Egress", errReason: "PROVIDER_GIVES_NO_IPV6_PREFIX"},
		"Socks5UDPNoPort":     {reason: "UDP ASSOCIATE is a SOCKS5 command", body: body("a", spec(`"socks5UDP":true`)), code: 400, status: "INVALID_ARGUMENT", field: "spec.socks5UDP", errReason: proxy.ReasonSocks5UDPWithoutPort},
		"BandwidthNonsense":   {reason: "a bandwidth is a number and a unit of bits", body: body("a", spec(`"bandwidthLimit":"fast"`)), code: 400, status: "INVALID_ARGUMENT", field: "spec.bandwidthLimit", errReason: proxy.ReasonBandwidthInvalid},
		"BandwidthBytes":      {reason: "bytes are not taken", body: body("a", spec(`"bandwidthLimit":"10MB"`)), code: 400, status: "INVALID_ARGUMENT", field: "spec.bandwidthLimit", errReason: proxy.ReasonBandwidthInvalid},
		"BandwidthTiny":       {reason: "1Mbit at the least", body: body("a", spec(`"bandwidthLimit":"1Kbit"`)), code: 400, status: "INVALID_ARGUMENT", field: "spec.bandwidthLimit", errReason: proxy.ReasonBandwidthOutOfRange},
		"BandwidthWrongType":  {reason: "a string, not a number", body: body("a", spec(`"bandwidthLimit":100`)), code: 400, status: "INVALID_ARGUMENT", field: "spec.bandwidthLimit", errReason: "FIELD_WRONG_TYPE"},
		"AccessLogWrongType":  {reason: "true or false", body: body("a", spec(`"accessLog":"no"`)), code: 400, status: "INVALID_ARGUMENT", field: "spec.accessLog", errReason: "FIELD_WRONG_TYPE"},
		"SecretForm":          {reason: "a secret version's name", body: body("a", spec(`"cloudInitSecret":"my-secret"`)), code: 400, status: "INVALID_ARGUMENT", field: "spec.cloudInitSecret", errReason: proxy.ReasonSecretVersionInvalid},
		"GetNameNotLabel":     {reason: "a path that names no proxy", method: "GET", path: coll + "/Not_A_Label", code: 400, status: "INVALID_ARGUMENT", field: "name", errReason: proxy.ReasonNameInvalid},
		"GetAbsent":           {reason: "a member learns a proxy is absent", method: "GET", path: coll + "/absent", code: 404, status: "NOT_FOUND", errReason: "PROXY_NOT_FOUND"},
		"DeleteAbsent":        {reason: "idempotent delete, but of something", method: "DELETE", path: coll + "/absent", code: 404, status: "NOT_FOUND", errReason: "PROXY_NOT_FOUND"},
		"ListPageSizeZero":    {reason: "1-500", method: "GET", path: coll + "?pageSize=0", code: 400, status: "INVALID_ARGUMENT", field: "pageSize", errReason: "PAGE_SIZE_INVALID"},
		"ListPageSizeHuge":    {reason: "1-500", method: "GET", path: coll + "?pageSize=100000", code: 400, status: "INVALID_ARGUMENT", field: "pageSize", errReason: "PAGE_SIZE_INVALID"},
		"ListBadPageToken":    {reason: "a token no list made", method: "GET", path: coll + "?pageToken=%21%21", code: 400, status: "INVALID_ARGUMENT", field: "pageToken", errReason: "PAGE_TOKEN_INVALID"},
		"ListNamespacesBad":   {reason: "a token no list made", method: "GET", path: "/v1/namespaces?pageToken=bm8tbGFiZWwh", code: 400, status: "INVALID_ARGUMENT", field: "pageToken", errReason: "PAGE_TOKEN_INVALID"},
		"RotateAnotherVerb":   {reason: "an unknown custom method", method: "POST", path: coll + "/p:restart", code: 404, status: "NOT_FOUND", errReason: "ROUTE_NOT_FOUND"},
		"RotateByGet":         {reason: "rotate is a POST", method: "GET", path: coll + "/p:rotate", code: 405, status: "METHOD_NOT_ALLOWED", errReason: "METHOD_NOT_ALLOWED"},
		"PutOnCollection":     {reason: "no such method there", method: "PUT", path: coll, body: body("a", goodSpec), code: 405, status: "METHOD_NOT_ALLOWED", errReason: "METHOD_NOT_ALLOWED"},
		"PutOnResource":       {reason: "a proxy is not replaced: PATCH changes it", method: "PUT", path: coll + "/a", body: body("a", goodSpec), code: 405, status: "METHOD_NOT_ALLOWED", errReason: "METHOD_NOT_ALLOWED"},
		"PostOnResource":      {reason: "creates go to the collection", method: "POST", path: coll + "/a", body: body("a", goodSpec), code: 405, status: "METHOD_NOT_ALLOWED", errReason: "METHOD_NOT_ALLOWED"},
		"UnknownPath":         {reason: "no such route", method: "GET", path: "/v2/whatever", code: 404, status: "NOT_FOUND", errReason: "ROUTE_NOT_FOUND"},
		"MemberNotEmail":      {reason: "members are emails", method: "PATCH", path: "/v1/namespaces/team-a", body: `{"members":{"bob":"viewer"}}`, code: 400, status: "INVALID_ARGUMENT", field: "members.`bob`", errReason: "MEMBER_INVALID"},
		"MemberRoleUnknown":   {reason: "three roles", method: "PATCH", path: "/v1/namespaces/team-a", body: `{"members":{"bob@example.com":"admin"}}`, code: 400, status: "INVALID_ARGUMENT", field: "members.`bob@example.com`", errReason: "ROLE_INVALID"},
		"QuotaZero":           {reason: "a quota of at least one", method: "PATCH", path: "/v1/namespaces/team-a", body: `{"quota":0}`, code: 400, status: "INVALID_ARGUMENT", field: "quota", errReason: "QUOTA_INVALID"},
		"PatchUnknownField":   {reason: "only members and quota change", method: "PATCH", path: "/v1/namespaces/team-a", body: `{"colour":"red"}`, code: 400, status: "INVALID_ARGUMENT", field: "colour", errReason: "FIELD_UNKNOWN"},
		"PatchNotPatchable":   {reason: "a field of the namespace a PATCH does not change", method: "PATCH", path: "/v1/namespaces/team-a", body: `{"name":"team-b"}`, code: 400, status: "INVALID_ARGUMENT", field: "name", errReason: "FIELD_NOT_PATCHABLE"},
		"PatchTextPlain":      {reason: "a merge patch is JSON", method: "PATCH", path: "/v1/namespaces/team-a", contentType: "text/plain", body: `{"quota":3}`, code: 415, status: "INVALID_ARGUMENT", errReason: "CONTENT_TYPE_UNSUPPORTED"},
		"MergePatchOnCreate":  {reason: "a merge patch is a PATCH's body, not a create's", contentType: "application/merge-patch+json", body: body("a", goodSpec), code: 415, status: "INVALID_ARGUMENT", errReason: "CONTENT_TYPE_UNSUPPORTED"},

		"PatchProxyPort":         {reason: "a proxy's port is fixed at its create", method: "PATCH", path: coll + "/p", body: `{"spec":{"connectPorts":[443],"port":8080}}`, code: 400, status: "INVALID_ARGUMENT", field: "spec.port", errReason: "FIELD_NOT_PATCHABLE"},
		"PatchProxySocks5UDP":    {reason: "the relay's socket is opened at the create", method: "PATCH", path: coll + "/p", body: `{"spec":{"socks5UDP":true}}`, code: 400, status: "INVALID_ARGUMENT", field: "spec.socks5UDP", errReason: "FIELD_NOT_PATCHABLE"},
		"PatchProxySocks5Port":   {reason: "a listener is opened at the create", method: "PATCH", path: coll + "/p", body: `{"spec":{"socks5Port":1080}}`, code: 400, status: "INVALID_ARGUMENT", field: "spec.socks5Port", errReason: "FIELD_NOT_PATCHABLE"},
		"PatchProxyIPv6NoPrefix": {reason: "a PATCH is held to the create's rule", method: "PATCH", path: coll + "/p", body: `{"spec":{"ipv6Egress":"perSession"}}`, code: 400, status: "INVALID_ARGUMENT", field: "spec.ipv6Egress", errReason: "PROVIDER_GIVES_NO_IPV6_PREFIX"},
		"PatchProxyIPv6Type":     {reason: "a string", method: "PATCH", path: coll + "/p", body: `{"spec":{"ipv6Egress":1}}`, code: 400, status: "INVALID_ARGUMENT", field: "spec.ipv6Egress", errReason: "FIELD_WRONG_TYPE"},
		"PatchProxyAccessLog":    {reason: "true, false or null", method: "PATCH", path: coll + "/p", body: `{"spec":{"accessLog":"off"}}`, code: 400, status: "INVALID_ARGUMENT", field: "spec.accessLog", errReason: "FIELD_WRONG_TYPE"},
		"PatchProxyPlacement":    {reason: "a proxy does not move", method: "PATCH", path: coll + "/p", body: `{"spec":{"placement":{"region":"europe-west1"}}}`, code: 400, status: "INVALID_ARGUMENT", field: "spec.placement", errReason: "FIELD_NOT_PATCHABLE"},
		"PatchProxyStatus":       {reason: "the status is the reconciler's", method: "PATCH", path: coll + "/p", body: `{"status":{"phase":"Ready"}}`, code: 400, status: "INVALID_ARGUMENT", field: "status", errReason: "FIELD_NOT_PATCHABLE"},
		"PatchProxyUnknown":      {reason: "a field the resource does not have", method: "PATCH", path: coll + "/p", body: `{"spec":{"colour":"red"}}`, code: 400, status: "INVALID_ARGUMENT", field: "spec.colour", errReason: "FIELD_UNKNOWN"},
		"PatchProxySpecNull":     {reason: "the spec is not removed", method: "PATCH", path: coll + "/p", body: `{"spec":null}`, code: 400, status: "INVALID_ARGUMENT", field: "spec", errReason: "FIELD_NOT_PATCHABLE"},
		"PatchProxyRangesNull":   {reason: "null is the default, and ranges have none: the create's rule", method: "PATCH", path: coll + "/p", body: `{"spec":{"allowedSourceRanges":null}}`, code: 400, status: "INVALID_ARGUMENT", field: "spec.allowedSourceRanges", errReason: proxy.ReasonSourceRangesRequired},
		"PatchProxyRangeWide":    {reason: "the create's policy", method: "PATCH", path: coll + "/p", contentType: "application/merge-patch+json", body: `{"spec":{"allowedSourceRanges":["0.0.0.0/0"]}}`, code: 400, status: "INVALID_ARGUMENT", field: "spec.allowedSourceRanges[0]", errReason: proxy.ReasonSourceRangeTooWide},
		"PatchProxyPortsType":    {reason: "a list of numbers", method: "PATCH", path: coll + "/p", body: `{"spec":{"connectPorts":"443"}}`, code: 400, status: "INVALID_ARGUMENT", field: "spec.connectPorts", errReason: "FIELD_WRONG_TYPE"},
		"PatchProxyPortTwice":    {reason: "the create's rule", method: "PATCH", path: coll + "/p", body: `{"spec":{"connectPorts":[443,443]}}`, code: 400, status: "INVALID_ARGUMENT", field: "spec.connectPorts[1]", errReason: proxy.ReasonConnectPortRepeated},
		"PatchProxyAbsent":       {reason: "a member learns a proxy is absent", method: "PATCH", path: coll + "/absent", body: `{"spec":{"connectPorts":[443]}}`, code: 404, status: "NOT_FOUND", errReason: "PROXY_NOT_FOUND"},
		"CredentialsByGet":       {reason: "rotateCredentials is a POST", method: "GET", path: coll + "/p:rotateCredentials", code: 405, status: "METHOD_NOT_ALLOWED", errReason: "METHOD_NOT_ALLOWED"},

		"PoolNameNotLabel":    {reason: "a pool's name is a label", method: "PUT", path: "/v1/pools/Warm_1", body: `{"placement":{"region":"us-central1"},"size":1}`, code: 400, status: "INVALID_ARGUMENT", field: "pool", errReason: proxy.ReasonNameInvalid},
		"PoolSizeMissing":     {reason: "a size is what a pool is", method: "PUT", path: "/v1/pools/warm", body: `{"placement":{"region":"us-central1"}}`, code: 400, status: "INVALID_ARGUMENT", field: "size", errReason: "POOL_SIZE_INVALID"},
		"PoolSizeHuge":        {reason: "0-100", method: "PUT", path: "/v1/pools/warm", body: `{"spec":{"placement":{"region":"us-central1"},"size":101}}`, code: 400, status: "INVALID_ARGUMENT", field: "spec.size", errReason: "POOL_SIZE_INVALID"},
		"PoolSizeNegative":    {reason: "0-100", method: "PUT", path: "/v1/pools/warm", body: `{"placement":{"region":"us-central1"},"size":-1}`, code: 400, status: "INVALID_ARGUMENT", field: "size", errReason: "POOL_SIZE_INVALID"},
		"PoolSpecTwice":       {reason: "one way of giving the spec", method: "PUT", path: "/v1/pools/warm", body: `{"size":1,"spec":{"placement":{"region":"us-central1"},"size":1}}`, code: 400, status: "INVALID_ARGUMENT", field: "spec", errReason: "POOL_SPEC_TWICE"},
		"PoolRegionMissing":   {reason: "a proxy's placement rules", method: "PUT", path: "/v1/pools/warm", body: `{"spec":{"placement":{"zone":"us-central1-a"},"size":1}}`, code: 400, status: "INVALID_ARGUMENT", field: "spec.placement.region", errReason: proxy.ReasonRegionRequired},
		"PoolZoneElsewhere":   {reason: "the provider's own rules", method: "PUT", path: "/v1/pools/warm", body: `{"placement":{"region":"us-central1","zone":"europe-west4-a"},"size":1}`, code: 400, status: "INVALID_ARGUMENT", field: "placement.zone", errReason: "ZONE_NOT_IN_REGION"},
		"PoolProviderUnknown": {reason: "only enabled providers", method: "PUT", path: "/v1/pools/warm", body: `{"provider":"azure","placement":{"region":"us-central1"},"size":1}`, code: 400, status: "INVALID_ARGUMENT", field: "provider", errReason: proxy.ReasonProviderNotEnabled},
		"PoolUnknownField":    {reason: "an unknown member is named", method: "PUT", path: "/v1/pools/warm", body: `{"placement":{"region":"us-central1"},"size":1,"colour":"red"}`, code: 400, status: "INVALID_ARGUMENT", field: "colour", errReason: "FIELD_UNKNOWN"},
		"PoolAbsent":          {reason: "an admin learns a pool is absent", method: "GET", path: "/v1/pools/absent", code: 404, status: "NOT_FOUND", errReason: "POOL_NOT_FOUND"},
		"PoolsBadPageToken":   {reason: "a token no list made", method: "GET", path: "/v1/pools?pageToken=%21%21", code: 400, status: "INVALID_ARGUMENT", field: "pageToken", errReason: "PAGE_TOKEN_INVALID"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			method, path := tc.method, tc.path
			if method == "" {
				method = "POST"
			}
			if path == "" {
				path = coll
			}
			who := editor
			switch {
			case strings.HasPrefix(path, "/v1/pools"):
				who = admin
			case method == "PATCH":
				who = owner
			}
			resp, b := e.doContent(who, method, path, tc.contentType, tc.body)
			got := decodeErr(t, b)
			if resp.StatusCode != tc.code || got.Error.Code != tc.code || got.Error.Status != tc.status || got.reason() != tc.errReason {
				t.Errorf("%s\nHTTP %d, error %d %s %s; want %d %s %s\n%s", tc.reason, resp.StatusCode, got.Error.Code, got.Error.Status, got.reason(), tc.code, tc.status, tc.errReason, b)
			}
			if fields := got.fields(); tc.field != "" && (len(fields) == 0 || fields[0] != tc.field) {
				t.Errorf("%s\nfields %v, want first %q\n%s", tc.reason, fields, tc.field, b)
			}
			if tc.code == 405 && resp.Header.Get("Allow") == "" {
				t.Errorf("%s\n405 without an Allow header", tc.reason)
			}
		})
	}
	if diff := cmp.Diff(before, snapshot(t, e)); diff != "" {
		t.Errorf("bad requests changed the store (-before +after):\n%s", diff)
	}
}

// TestEveryRuleAtOnce: validation reports every broken rule, the neutral
// ones first, then the provider's.
func TestEveryRuleAtOnce(t *testing.T) {
	e := memEnv(t)
	e.seed()
	_, b := e.do(editor, "POST", "/v1/namespaces/team-a/proxies",
		body("Bad_Name", `{"provider":"gcp","placement":{"region":"us-central1","zone":"us-east1-b","machineType":"n2-highmem-128"},"port":70000,"allowedSourceRanges":["nope"]}`))
	want := []string{"name", "spec.port", "spec.allowedSourceRanges[0]", "spec.placement.zone", "spec.placement.machineType"}
	if diff := cmp.Diff(want, decodeErr(t, b).fields()); diff != "" {
		t.Errorf("fields (-want +got):\n%s", diff)
	}
}

// snapshot is everything the store holds, read behind the API's back.
type storeState struct {
	Proxies    []*proxy.Proxy
	Namespaces map[string]any
	Pools      []*proxy.Pool
}

func snapshot(t *testing.T, e *env) storeState {
	t.Helper()
	ctx := context.Background()
	var s storeState
	s.Namespaces = map[string]any{}
	nss, _, err := e.store.ListNamespaces(ctx, "", 500, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, ns := range nss {
		s.Namespaces[ns.Name] = ns
		page, _, err := e.store.List(ctx, ns.Name, 500, "")
		if err != nil {
			t.Fatal(err)
		}
		s.Proxies = append(s.Proxies, page...)
	}
	pools, _, err := e.store.ListPools(ctx, 500, "")
	if err != nil {
		t.Fatal(err)
	}
	s.Pools = pools
	if ms, ok := e.store.(*storefake.Store); ok {
		_, writes := ms.Counts()
		s.Namespaces["(writes)"] = writes
	}
	return s
}
