package httpapi_test

import (
	"context"
	"net/netip"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/internal/httpapi"
	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/provider/gcp"
	"github.com/egress-proxies/egress/internal/proxy"
)

// TestPolicy: each rule of the operator's policy, neutral and the gcp
// provider's, refuses a request outside it — 400 naming the field and
// the rule, 403 for a feature not enabled — with nothing written, and
// takes the request just inside it.
func TestPolicy(t *testing.T) {
	gcpSpec := func(placement, extra string) string {
		if extra != "" {
			extra = "," + extra
		}
		return `{"provider":"gcp","placement":` + placement + `,"allowedSourceRanges":["203.0.113.0/24"]` + extra + `}`
	}
	ranges := func(r ...string) string {
		return `{"provider":"gcp","placement":{"region":"us-central1"},"allowedSourceRanges":["` + strings.Join(r, `","`) + `"]}`
	}
	const region = `{"region":"us-central1"}`
	allowCloudInit := func(o *httpapi.Options) { o.Policy.AllowCloudInit = true }
	gcpPolicy := func(pol gcp.Policy) func(*httpapi.Options) {
		return func(o *httpapi.Options) {
			reg := provider.NewRegistry()
			_ = reg.Register(gcp.Type, func(context.Context) (provider.Provider, error) { return nil, nil }, provider.WithValidator(gcp.Validator(pol)))
			o.Providers = provider.NewSet(reg)
		}
	}
	europeOnly := gcpPolicy(gcp.Policy{Regions: []string{"europe-west4"}, MachineTypes: gcp.DefaultAllowedMachineTypes, Images: gcp.DefaultAllowedImages})
	firewall := func(ranges ...string) func(*httpapi.Options) {
		return func(o *httpapi.Options) {
			for _, r := range ranges {
				o.Policy.FirewallSourceRanges = append(o.Policy.FirewallSourceRanges, netip.MustParsePrefix(r))
			}
		}
	}
	ports := func(r ...proxy.PortRange) func(*httpapi.Options) {
		return func(o *httpapi.Options) { o.Policy.ProxyPorts = r }
	}
	cases := map[string]struct {
		reason   string
		change   func(*httpapi.Options)
		spec     string
		code     int
		field    string
		ruleName string
		// port, if set, is the port the stored spec must have.
		port int32
	}{
		"AnySourceRefused":      {reason: "0.0.0.0/0 needs the operator's leave", spec: ranges("0.0.0.0/0"), code: 400, field: "spec.allowedSourceRanges[0]", ruleName: proxy.ReasonSourceRangeTooWide},
		"AnySourceIPv6Refused":  {reason: "::/0 too", spec: ranges("203.0.113.0/24", "::/0"), code: 400, field: "spec.allowedSourceRanges[1]", ruleName: proxy.ReasonSourceRangeTooWide},
		"AnySourceAllowed":      {reason: "with ALLOW_ANY_SOURCE, 0.0.0.0/0 is taken", change: func(o *httpapi.Options) { o.Policy.AllowAnySource = true }, spec: ranges("0.0.0.0/0"), code: 201},
		"AnySourceAllowedNot7":  {reason: "ALLOW_ANY_SOURCE allows /0, not any width: a /7 is a typo", change: func(o *httpapi.Options) { o.Policy.AllowAnySource = true }, spec: ranges("10.0.0.0/7"), code: 400, field: "spec.allowedSourceRanges[0]", ruleName: proxy.ReasonSourceRangeTooWide},
		"IPv4WiderThan8":        {reason: "a /7 is wider than a /8", spec: ranges("10.0.0.0/7"), code: 400, field: "spec.allowedSourceRanges[0]", ruleName: proxy.ReasonSourceRangeTooWide},
		"IPv4Slash8":            {reason: "a /8 is the widest", spec: ranges("10.0.0.0/8"), code: 201},
		"IPv6WiderThan32":       {reason: "a /31 is wider than a /32", spec: ranges("2001:db8::/31"), code: 400, field: "spec.allowedSourceRanges[0]", ruleName: proxy.ReasonSourceRangeTooWide},
		"IPv6Slash32":           {reason: "a /32 is the widest", spec: ranges("2001:db8::/32"), code: 201},
		"PortNotOpen":           {reason: "a port the firewall does not open: the proxy would serve no one", spec: gcpSpec(region, `"port":8080`), code: 400, field: "spec.port", ruleName: proxy.ReasonPortNotOpen},
		"PortOpen":              {reason: "3128, which the firewall opens by default", spec: gcpSpec(region, `"port":3128`), code: 201},
		"PortInAnOpenRange":     {reason: "a port of a range PROXY_PORTS opens", change: ports(proxy.PortRange{First: 3128, Last: 3128}, proxy.PortRange{First: 8080, Last: 8090}), spec: gcpSpec(region, `"port":8085`), code: 201, port: 8085},
		"PortPastAnOpenRange":   {reason: "one past the range", change: ports(proxy.PortRange{First: 3128, Last: 3128}, proxy.PortRange{First: 8080, Last: 8090}), spec: gcpSpec(region, `"port":8091`), code: 400, field: "spec.port", ruleName: proxy.ReasonPortNotOpen},
		"DefaultPortNotOpen":    {reason: "a spec without a port gets one the firewall opens", change: ports(proxy.PortRange{First: 8080, Last: 8080}), spec: gcpSpec(region, ""), code: 201, port: 8080},
		"SourceInFirewall":      {reason: "a range inside the firewall's", change: firewall("203.0.0.0/16"), spec: ranges("203.0.113.0/24"), code: 201},
		"SourceOutsideFirewall": {reason: "a range the firewall keeps out: its clients could never reach the proxy", change: firewall("203.0.113.0/24"), spec: ranges("203.0.113.0/24", "198.51.100.0/24"), code: 400, field: "spec.allowedSourceRanges[1]", ruleName: proxy.ReasonSourceRangeNotOpen},
		"SourceWiderThanFW":     {reason: "a range only half inside the firewall's", change: firewall("203.0.113.0/25"), spec: ranges("203.0.113.0/24"), code: 400, field: "spec.allowedSourceRanges[0]", ruleName: proxy.ReasonSourceRangeNotOpen},
		"SourceAcrossTwoRanges": {reason: "a range the firewall's two halves cover together", change: firewall("203.0.113.0/25", "203.0.113.128/25"), spec: ranges("203.0.113.0/24"), code: 201},
		"AnySourceBeyondFW":     {reason: "ALLOW_ANY_SOURCE does not open the firewall", change: func(o *httpapi.Options) { o.Policy.AllowAnySource = true; firewall("203.0.113.0/24")(o) }, spec: ranges("0.0.0.0/0"), code: 400, field: "spec.allowedSourceRanges[0]", ruleName: proxy.ReasonSourceRangeNotOpen},
		"IPv6OutsideIPv4FW":     {reason: "an IPv6 range through a firewall that lets in IPv4 only", change: firewall("0.0.0.0/0"), spec: ranges("2001:db8::/48"), code: 400, field: "spec.allowedSourceRanges[0]", ruleName: proxy.ReasonSourceRangeNotOpen},
		"CloudInitDisabled":     {reason: "custom cloud-init is a feature the operator enables: 403 naming it", spec: gcpSpec(region, `"cloudInit":"#cloud-config\n"`), code: 403, field: "spec.cloudInit", ruleName: proxy.ReasonCloudInitDisabled},
		"CloudInitEnabled":      {reason: "enabled, it is taken", change: allowCloudInit, spec: gcpSpec(region, `"cloudInit":"#cloud-config\n"`), code: 201},
		"CloudInitTooLarge":     {reason: "over Compute's metadata value limit", change: allowCloudInit, spec: gcpSpec(region, `"cloudInit":"`+strings.Repeat("x", gcp.MaxMetadataValueBytes+1)+`"`), code: 400, field: "spec.cloudInit", ruleName: provider.ReasonCloudInitTooLarge},
		"CloudInitAtTheLimit":   {reason: "at the limit", change: allowCloudInit, spec: gcpSpec(region, `"cloudInit":"`+strings.Repeat("x", gcp.MaxMetadataValueBytes)+`"`), code: 201},
		"SecretDisabled":        {reason: "with no prefix configured, no secret is named", change: func(o *httpapi.Options) { o.Policy.CloudInitSecretPrefix = "" }, spec: gcpSpec(region, `"cloudInitSecret":"projects/demo-test/secrets/egress-team-a_init/versions/1"`), code: 403, field: "spec.cloudInitSecret", ruleName: proxy.ReasonCloudInitSecretDisabled},
		"SecretOutsidePrefix":   {reason: "a secret outside the prefix", spec: gcpSpec(region, `"cloudInitSecret":"projects/demo-test/secrets/db-password/versions/1"`), code: 400, field: "spec.cloudInitSecret", ruleName: proxy.ReasonSecretOutsidePrefix},
		"SecretOfAnotherTeam":   {reason: "a secret under the prefix, of another namespace", spec: gcpSpec(region, `"cloudInitSecret":"projects/demo-test/secrets/egress-team-b_init/versions/1"`), code: 400, field: "spec.cloudInitSecret", ruleName: proxy.ReasonSecretOutsidePrefix},
		"SecretOfAnotherProj":   {reason: "the prefix names the project", spec: gcpSpec(region, `"cloudInitSecret":"projects/elsewhere/secrets/egress-team-a_init/versions/1"`), code: 400, field: "spec.cloudInitSecret", ruleName: proxy.ReasonSecretOutsidePrefix},
		"SecretOwn":             {reason: "the namespace's own secret", spec: gcpSpec(region, `"cloudInitSecret":"projects/demo-test/secrets/egress-team-a_init/versions/latest"`), code: 201},
		"RegionMalformed":       {reason: "a Compute region's form", spec: gcpSpec(`{"region":"Central"}`, ""), code: 400, field: "spec.placement.region", ruleName: provider.ReasonRegionInvalid},
		"RegionNotAllowed":      {reason: "a region outside GCP_ALLOWED_REGIONS", change: europeOnly, spec: gcpSpec(region, ""), code: 400, field: "spec.placement.region", ruleName: provider.ReasonRegionNotAllowed},
		"RegionAllowed":         {reason: "a region inside it", change: europeOnly, spec: gcpSpec(`{"region":"europe-west4","zone":"europe-west4-b"}`, ""), code: 201},
		"ZoneNotInRegion":       {reason: "a zone of another region", spec: gcpSpec(`{"region":"us-central1","zone":"europe-west4-a"}`, ""), code: 400, field: "spec.placement.zone", ruleName: provider.ReasonZoneNotInRegion},
		"ZoneMalformed":         {reason: "a zone that is no zone of the region", spec: gcpSpec(`{"region":"us-central1","zone":"us-central1-ab"}`, ""), code: 400, field: "spec.placement.zone", ruleName: provider.ReasonZoneNotInRegion},
		"RegionOnly":            {reason: "a region alone: the provider picks the zone", spec: gcpSpec(region, ""), code: 201},
		"ZoneInRegion":          {reason: "a zone of the region", spec: gcpSpec(`{"region":"us-central1","zone":"us-central1-f"}`, ""), code: 201},
		"HighMem":               {reason: "n2-highmem-128 is no small proxy", spec: gcpSpec(`{"region":"us-central1","machineType":"n2-highmem-128"}`, ""), code: 400, field: "spec.placement.machineType", ruleName: provider.ReasonMachineTypeNotAllowed},
		"GPU":                   {reason: "a2-highgpu-1g carries a GPU", spec: gcpSpec(`{"region":"us-central1","machineType":"a2-highgpu-1g"}`, ""), code: 400, field: "spec.placement.machineType", ruleName: provider.ReasonMachineTypeNotAllowed},
		"MachineTypeMalformed":  {reason: "not a GCE name", spec: gcpSpec(`{"region":"us-central1","machineType":"E2 Micro"}`, ""), code: 400, field: "spec.placement.machineType", ruleName: provider.ReasonMachineTypeInvalid},
		"MachineTypeAllowed":    {reason: "e2-medium is allowed by default", spec: gcpSpec(`{"region":"us-central1","machineType":"e2-medium"}`, ""), code: 201},
		"ImageForeignProject":   {reason: "an image of a project nobody vetted", spec: gcpSpec(`{"region":"us-central1","image":"projects/evil-images/global/images/family/debian-12"}`, ""), code: 400, field: "spec.placement.image", ruleName: provider.ReasonImageNotAllowed},
		"ImageOtherFamily":      {reason: "another family of Debian's project", spec: gcpSpec(`{"region":"us-central1","image":"projects/debian-cloud/global/images/family/debian-11"}`, ""), code: 400, field: "spec.placement.image", ruleName: provider.ReasonImageNotAllowed},
		"ImageMalformed":        {reason: "not an image path", spec: gcpSpec(`{"region":"us-central1","image":"debian-12"}`, ""), code: 400, field: "spec.placement.image", ruleName: provider.ReasonImageInvalid},
		"ImageDefaultFamily":    {reason: "Debian 12, as a URL", spec: gcpSpec(`{"region":"us-central1","image":"https://www.googleapis.com/compute/v1/projects/debian-cloud/global/images/family/debian-12"}`, ""), code: 201},
		"ImageAnyOfAProject":    {reason: "a policy entry …/images/* allows that project's images", change: gcpPolicy(gcp.Policy{MachineTypes: gcp.DefaultAllowedMachineTypes, Images: []string{gcp.DefaultImage, "projects/acme-images/global/images/*"}}), spec: gcpSpec(`{"region":"us-central1","image":"projects/acme-images/global/images/proxy-v3"}`, ""), code: 201},
		"ProviderDefaultsCount": {reason: "a placement that names no machine type is held to the one Create uses", change: gcpPolicy(gcp.Policy{MachineTypes: []string{"e2-small"}, Images: gcp.DefaultAllowedImages}), spec: gcpSpec(region, ""), code: 400, field: "spec.placement.machineType", ruleName: provider.ReasonMachineTypeNotAllowed},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var change []func(*httpapi.Options)
			if tc.change != nil {
				change = append(change, tc.change)
			}
			e := memEnv(t, change...)
			e.seed()
			before := snapshot(t, e)
			resp, b := e.do(editor, "POST", "/v1/namespaces/team-a/proxies", body("new", tc.spec))
			if resp.StatusCode != tc.code {
				t.Fatalf("%s\nstatus %d, want %d\n%.2000s", tc.reason, resp.StatusCode, tc.code, b)
			}
			if tc.code == 201 {
				p, err := e.store.Get(context.Background(), proxy.Key{Namespace: "team-a", Name: "new"})
				if err != nil {
					t.Errorf("%s\naccepted, but not written: %v", tc.reason, err)
				} else if tc.port != 0 && p.Spec.Port != tc.port {
					t.Errorf("%s\nstored with port %d, want %d", tc.reason, p.Spec.Port, tc.port)
				}
				return
			}
			got := decodeErr(t, b)
			if diff := cmp.Diff([]string{tc.field}, got.fields()); diff != "" || got.reason() != tc.ruleName {
				t.Errorf("%s\nreason %s, want %s; fields (-want +got):\n%s\n%s", tc.reason, got.reason(), tc.ruleName, diff, b)
			}
			if tc.code == 403 && got.Error.Status != "PERMISSION_DENIED" {
				t.Errorf("%s\nstatus %s, want PERMISSION_DENIED", tc.reason, got.Error.Status)
			}
			if diff := cmp.Diff(before, snapshot(t, e)); diff != "" {
				t.Errorf("%s\nthe refused request changed the store (-before +after):\n%s", tc.reason, diff)
			}
		})
	}
}
