package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/internal/proxy"
)

// TestDeprecatedSpellings: each spelling an earlier release used still
// works, as the flag that replaced it; says once on standard error what to
// write instead; and is not in the help.
func TestDeprecatedSpellings(t *testing.T) {
	cases := map[string]struct {
		reason     string
		args       []string
		want       proxy.Spec
		wantNotice string
		notInHelp  string
	}{
		"Allow": {
			reason:     "create --allow was the flag of spec.allowedSourceRanges, which update calls --allowed-source-range",
			args:       []string{"--allow", "203.0.113.0/24", "--allow", "198.51.100.7/32"},
			want:       proxy.Spec{AllowedSourceRanges: []string{"203.0.113.0/24", "198.51.100.7/32"}, IPPolicy: proxy.IPEphemeral},
			wantNotice: "egress: --allow is deprecated and goes in the next release; use --allowed-source-range\n",
			notInHelp:  "--allow ",
		},
		"Static": {
			reason:     "create --static was the switch of spec.ipPolicy Static",
			args:       []string{"--allowed-source-range", "203.0.113.0/24", "--static"},
			want:       proxy.Spec{AllowedSourceRanges: []string{"203.0.113.0/24"}, IPPolicy: proxy.IPStatic},
			wantNotice: "egress: --static is deprecated and goes in the next release; use --ip-policy Static\n",
			notInHelp:  "--static",
		},
		"New": {
			reason: "the flags of this release say nothing on standard error",
			args:   []string{"--allowed-source-range", "203.0.113.0/24", "--ip-policy", "Static"},
			want:   proxy.Spec{AllowedSourceRanges: []string{"203.0.113.0/24"}, IPPolicy: proxy.IPStatic},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			api, _ := localAPI(t)
			args := append([]string{"proxies", "create", "q", "--region", "us-central1", "-o", "json"}, tc.args...)
			code, stdout, stderr := egress(api, args...)
			var p proxy.Proxy
			if code != exitOK || json.Unmarshal([]byte(stdout), &p) != nil {
				t.Fatalf("%s\negress %s: exit %d\nstdout:\n%s\nstderr:\n%s", tc.reason, strings.Join(args, " "), code, stdout, stderr)
			}
			got := proxy.Spec{AllowedSourceRanges: p.Spec.AllowedSourceRanges, IPPolicy: p.Spec.IPPolicy}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nthe spec the API stored (-want +got):\n%s", tc.reason, diff)
			}
			if stderr != tc.wantNotice {
				t.Errorf("%s\nstderr %q, want %q", tc.reason, stderr, tc.wantNotice)
			}
			if tc.notInHelp == "" {
				return
			}
			_, help, _ := egress(api, "proxies", "create", "--help")
			if !strings.Contains(help, "--allowed-source-range") || strings.Contains(help, tc.notInHelp) {
				t.Errorf("%s\nthe help shows %q, or not --allowed-source-range:\n%s", tc.reason, tc.notInHelp, help)
			}
		})
	}
}
