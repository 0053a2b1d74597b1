package httpapi_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/internal/httpapi"
	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/provider/gcp"
)

// TestIPv6EgressByCloud: spec.ipv6Egress defaults by what the cloud's
// plugin declares (single where its VMs get a routed prefix, off where
// they get none), a mode that picks addresses of a prefix is taken on a
// cloud that gives one and refused with a reason naming the provider and
// the rule on one that does not, and a PATCH changes it.
func TestIPv6EgressByCloud(t *testing.T) {
	const ranges = `"allowedSourceRanges":["198.51.100.0/24"]`
	placements := map[string]string{
		"mock":    `"provider":"mock","placement":{"region":"us-central1","zone":"us-central1-a"}`,
		"gcp":     `"provider":"gcp","placement":{"region":"us-central1"}`,
		"hetzner": `"provider":"hetzner","placement":{"region":"eu-central","zone":"fsn1"}`,
		"aws":     `"provider":"aws","placement":{"region":"us-east-1","zone":"us-east-1b"}`,
	}
	type outcome struct {
		Code       int
		IPv6Egress string
		Reason     string
	}
	cases := map[string]struct {
		reason string
		cloud  string
		mode   string // "" leaves it out
		want   outcome
	}{
		"MockDefault":          {reason: "the mock's VMs get no prefix: off", cloud: "mock", want: outcome{Code: 201, IPv6Egress: "off"}},
		"GCPDefault":           {reason: "a dual-stack interface's /96: single", cloud: "gcp", want: outcome{Code: 201, IPv6Egress: "single"}},
		"HetznerDefault":       {reason: "every server's /64: single", cloud: "hetzner", want: outcome{Code: 201, IPv6Egress: "single"}},
		"AWSDefault":           {reason: "a /80 delegated to the interface: single", cloud: "aws", want: outcome{Code: 201, IPv6Egress: "single"}},
		"HetznerPerConnection": {reason: "a prefix to pick from", cloud: "hetzner", mode: "perConnection", want: outcome{Code: 201, IPv6Egress: "perConnection"}},
		"GCPPerSession":        {reason: "a prefix to pick from", cloud: "gcp", mode: "perSession", want: outcome{Code: 201, IPv6Egress: "perSession"}},
		"AWSPerConnection":     {reason: "the VM reads its delegated /80 from the instance metadata", cloud: "aws", mode: "perConnection", want: outcome{Code: 201, IPv6Egress: "perConnection"}},
		"AWSPerSession":        {reason: "the same /80, one address per session", cloud: "aws", mode: "perSession", want: outcome{Code: 201, IPv6Egress: "perSession"}},
		"MockPerConnection":    {reason: "no prefix: refused at the API", cloud: "mock", mode: "perConnection", want: outcome{Code: 400, Reason: "PROVIDER_GIVES_NO_IPV6_PREFIX"}},
		"MockSingle":           {reason: "single needs no prefix", cloud: "mock", mode: "single", want: outcome{Code: 201, IPv6Egress: "single"}},
		"HetznerOff":           {reason: "off is a choice anywhere", cloud: "hetzner", mode: "off", want: outcome{Code: 201, IPv6Egress: "off"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			e := memEnv(t)
			e.seed()
			spec := placements[tc.cloud] + "," + ranges
			if tc.mode != "" {
				spec += `,"ipv6Egress":"` + tc.mode + `"`
			}
			resp, b := e.do(admin, "POST", "/v1/namespaces/team-a/proxies", body("x", "{"+spec+"}"))
			got := outcome{Code: resp.StatusCode}
			if resp.StatusCode == 201 {
				var p struct {
					Spec struct {
						IPv6Egress string `json:"ipv6Egress"`
					} `json:"spec"`
				}
				if err := json.Unmarshal(b, &p); err != nil {
					t.Fatal(err)
				}
				got.IPv6Egress = p.Spec.IPv6Egress
			} else {
				got.Reason = decodeErr(t, b).reason()
				for _, w := range []string{`provider \"` + tc.cloud + `\"`, "spec.ipv6Egress", "prefix"} {
					if !strings.Contains(string(b), w) {
						t.Errorf("the refusal %s does not say %s", b, w)
					}
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\n(-want +got):\n%s", tc.reason, diff)
			}
		})
	}
}

// TestPatchIPv6Egress: a PATCH sets the mode, counting a generation, and
// null puts back the cloud's default.
func TestPatchIPv6Egress(t *testing.T) {
	e := memEnv(t)
	e.seed()
	const path = "/v1/namespaces/team-a/proxies/gp"
	if resp, b := e.do(admin, "POST", "/v1/namespaces/team-a/proxies", body("gp", `{"provider":"gcp","placement":{"region":"us-central1"},"allowedSourceRanges":["198.51.100.0/24"]}`)); resp.StatusCode != 201 {
		t.Fatalf("POST: %d %s", resp.StatusCode, b)
	}
	type state struct {
		Code       int
		IPv6Egress string
		Generation int64
	}
	var got []state
	for _, patch := range []string{`{"spec":{"ipv6Egress":"perConnection"}}`, `{"spec":{"ipv6Egress":"perConnection"}}`, `{"spec":{"ipv6Egress":null}}`} {
		resp, b := e.do(owner, "PATCH", path, patch)
		var p struct {
			Generation int64 `json:"generation"`
			Spec       struct {
				IPv6Egress string `json:"ipv6Egress"`
			} `json:"spec"`
		}
		_ = json.Unmarshal(b, &p)
		got = append(got, state{resp.StatusCode, p.Spec.IPv6Egress, p.Generation})
	}
	want := []state{
		{200, "perConnection", 2},
		{200, "perConnection", 2}, // the same mode changes nothing
		{200, "single", 3},        // null: gcp's default
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("PATCHes of spec.ipv6Egress (-want +got):\n%s", diff)
	}
}

// TestIPv6EgressOnAnIPv4OnlyGCE: where the operator's GCE VMs are
// IPv4-only (GCP_STACK_TYPE), they get no prefix though the cloud can
// give one, and gcp's own rule refuses an egress that needs one, naming
// the setting.
func TestIPv6EgressOnAnIPv4OnlyGCE(t *testing.T) {
	e := memEnv(t, func(o *httpapi.Options) {
		reg := provider.NewRegistry()
		_ = reg.Register(gcp.Type, func(context.Context) (provider.Provider, error) { return nil, nil },
			provider.WithValidator(gcp.Validator(gcp.Policy{MachineTypes: gcp.DefaultAllowedMachineTypes, Images: gcp.DefaultAllowedImages, StackType: gcp.StackIPv4})),
			provider.InPlace(), provider.IPv6Prefix(gcp.Plugin.IPv6Prefix))
		o.Providers, o.DefaultProvider = provider.NewSet(reg), gcp.Type
	})
	e.seed()
	resp, b := e.do(admin, "POST", "/v1/namespaces/team-a/proxies", body("x", `{"provider":"gcp","placement":{"region":"us-central1"},"allowedSourceRanges":["198.51.100.0/24"],"ipv6Egress":"perSession"}`))
	if got := decodeErr(t, b); resp.StatusCode != 400 || got.reason() != "PROVIDER_GIVES_NO_IPV6_PREFIX" || !strings.Contains(string(b), "GCP_STACK_TYPE") || !strings.Contains(string(b), "spec.ipv6Egress") {
		t.Errorf("perSession on IPv4-only GCE: %d %s, want 400 PROVIDER_GIVES_NO_IPV6_PREFIX on spec.ipv6Egress naming GCP_STACK_TYPE", resp.StatusCode, b)
	}
}
