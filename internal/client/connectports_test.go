package client

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/internal/proxy"
)

func TestConnectPorts(t *testing.T) {
	cases := map[string]struct {
		reason string
		ports  []int32
		want   string
	}{
		"Given":   {reason: "the spec's ports, in its order", ports: []int32{8443, 443}, want: "8443, 443"},
		"Default": {reason: "none given is the default, named so", want: "443, 80 (the default)"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := ConnectPorts(&proxy.Proxy{Spec: proxy.Spec{ConnectPorts: tc.ports}})
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s (-want +got):\n%s", tc.reason, diff)
			}
		})
	}
}
