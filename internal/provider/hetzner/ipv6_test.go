package hetzner

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestIPv6Prefix: every server is made with IPv6 (it costs nothing, so
// it is asked whatever the spec's ipv6Egress), and Get reports the /64
// Hetzner routes to it, read from the server's public_net.ipv6.ip as the
// fake answers it, whether the request asked for a prefix or not.
func TestIPv6Prefix(t *testing.T) {
	for name, tc := range map[string]struct {
		reason string
		ask    bool
	}{
		"Asked":    {reason: "a spec whose ipv6Egress picks addresses of the prefix", ask: true},
		"NotAsked": {reason: "the default egress: the /64 comes with every server all the same", ask: false},
	} {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t)
			req := request()
			req.IPv6Prefix = tc.ask
			id, err := e.p.Create(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			in, err := e.p.Get(context.Background(), id)
			if err != nil {
				t.Fatal(err)
			}
			servers := e.fake.Servers()
			if len(servers) != 1 {
				t.Fatalf("%d servers, want 1", len(servers))
			}
			type seen struct {
				AskedIPv6 bool
				Prefix    string
			}
			want := seen{AskedIPv6: true, Prefix: servers[0].PublicNet.IPv6.IP}
			got := seen{AskedIPv6: e.fake.Creates()[0].PublicNet.EnableIPv6, Prefix: in.IPv6Prefix}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("%s\n(-want +got):\n%s", tc.reason, diff)
			}
			if want.Prefix == "" || want.Prefix[len(want.Prefix)-3:] != "/64" {
				t.Errorf("the fake's public_net.ipv6.ip is %q, want a /64 as Hetzner's API gives", want.Prefix)
			}
		})
	}
}
