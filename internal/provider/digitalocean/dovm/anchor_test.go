package dovm_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/internal/provider/digitalocean/dovm"
	"github.com/egress-proxies/egress/internal/vm/agent"
)

// netipComparers compare netip's values, whose fields are unexported.
var netipComparers = cmp.Options{
	cmp.Comparer(func(a, b netip.Addr) bool { return a == b }),
	cmp.Comparer(func(a, b netip.Prefix) bool { return a == b }),
}

// doMetadataDoc is DigitalOcean's /metadata/v1.json in the shape its
// metadata reference and cloud-init's DigitalOcean helper show, with the
// fields Anchor does not read (floating_ip, the private interface, …)
// left in: reservedIP "" is an inactive reserved IP, as DigitalOcean
// writes it ({"active": false}, no address).
func doMetadataDoc(reservedIP string) string {
	rip := `{"active": false}`
	if reservedIP != "" {
		rip = fmt.Sprintf(`{"active": true, "ip_address": %q}`, reservedIP)
	}
	return `{"droplet_id": 2756294, "hostname": "egress-3f2c1b0a", "region": "fra1",
	 "floating_ip": {"ipv4": ` + rip + `}, "reserved_ip": {"ipv4": ` + rip + `},
	 "interfaces": {"public": [{"mac": "04:01:2a:0f:2a:01", "type": "public",
	   "ipv4": {"ip_address": "192.0.2.2", "netmask": "255.255.255.0", "gateway": "192.0.2.1"},
	   "anchor_ipv4": {"ip_address": "10.19.0.5", "netmask": "255.255.0.0", "gateway": "10.19.0.1"}}],
	  "private": [{"mac": "04:01:2a:0f:2a:02", "type": "private",
	   "ipv4": {"ip_address": "10.114.0.2", "netmask": "255.255.240.0", "gateway": "10.114.0.1"}}]},
	 "dns": {"nameservers": ["67.207.67.2", "67.207.67.3"]}}`
}

var (
	publicGW = netip.MustParseAddr("192.0.2.1")
	anchor   = netip.MustParsePrefix("10.19.0.5/16")
	anchorGW = netip.MustParseAddr("10.19.0.1")
	reserved = netip.MustParseAddr("203.0.113.50")
)

// TestParseAnchorMetadata: the document is read into the reserved IP's
// state and the anchor's address, prefix and gateway; an active reserved
// IP that the Droplet could not route through is refused, naming the
// field.
func TestParseAnchorMetadata(t *testing.T) {
	withoutAnchor := strings.Replace(doMetadataDoc("203.0.113.50"),
		`"anchor_ipv4": {"ip_address": "10.19.0.5", "netmask": "255.255.0.0", "gateway": "10.19.0.1"}`, `"x": 1`, 1)
	cases := map[string]struct {
		reason  string
		body    string
		want    dovm.AnchorMetadata
		wantErr string
	}{
		"no reserved IP": {
			reason: "an Ephemeral Droplet's, or a Static one's before the provider assigns its address: not active, its anchor known",
			body:   doMetadataDoc(""),
			want:   dovm.AnchorMetadata{Anchor: anchor, AnchorGateway: anchorGW, PublicGateway: publicGW},
		},
		"assigned": {
			reason: "the reserved IP, the anchor with the prefix its netmask gives, both gateways",
			body:   doMetadataDoc("203.0.113.50"),
			want:   dovm.AnchorMetadata{Active: true, ReservedIP: reserved, Anchor: anchor, AnchorGateway: anchorGW, PublicGateway: publicGW},
		},
		"active without an address": {
			reason:  "nothing to say the traffic leaves from",
			body:    `{"reserved_ip": {"ipv4": {"active": true}}}`,
			wantErr: `dovm: DigitalOcean's metadata: reserved_ip.ipv4.ip_address "" is not an IPv4 address`,
		},
		"active without an anchor": {
			reason:  "nothing to route through",
			body:    withoutAnchor,
			wantErr: "dovm: DigitalOcean's metadata: a reserved IP is active but interfaces.public[0] has no anchor_ipv4",
		},
		"a netmask that is no prefix": {
			reason:  "an anchor whose prefix cannot be told",
			body:    strings.Replace(doMetadataDoc(""), "255.255.0.0", "255.0.255.0", 1),
			wantErr: "dovm: DigitalOcean's metadata: anchor_ipv4's netmask 255.0.255.0 is not a prefix",
		},
		"not JSON": {
			reason:  "a metadata service that answers something else",
			body:    "<html>",
			wantErr: "dovm: DigitalOcean's metadata document: invalid character '<' looking for beginning of value",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := dovm.ParseAnchorMetadata([]byte(tc.body))
			if diff := cmp.Diff(tc.wantErr, errString(err)); diff != "" {
				t.Fatalf("%s\nerror (-want +got):\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.want, got, netipComparers); diff != "" {
				t.Errorf("%s\n(-want +got):\n%s", tc.reason, diff)
			}
		})
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// TestPlanAnchor: the route decision. An active reserved IP puts the
// default route through the anchor gateway from the anchor address (and
// the anchor address on the device first, where cloud-init did not), and
// nothing that is so already; no reserved IP changes nothing, unless the
// route still goes through the anchor of an address that was taken away.
func TestPlanAnchor(t *testing.T) {
	active := dovm.AnchorMetadata{Active: true, ReservedIP: reserved, Anchor: anchor, AnchorGateway: anchorGW, PublicGateway: publicGW}
	inactive := dovm.AnchorMetadata{Anchor: anchor, AnchorGateway: anchorGW, PublicGateway: publicGW}
	own := netip.MustParsePrefix("192.0.2.2/24")
	viaPublic := dovm.Route{Gateway: publicGW, Dev: "eth0"}
	viaAnchor := dovm.Route{Gateway: anchorGW, Dev: "eth0", Src: anchor.Addr()}
	switchRoute := []string{"route", "replace", "default", "via", "10.19.0.1", "dev", "eth0", "src", "10.19.0.5"}
	cases := map[string]struct {
		reason string
		meta   dovm.AnchorMetadata
		route  dovm.Route
		addrs  []netip.Prefix
		want   dovm.AnchorPlan
	}{
		"no reserved IP": {
			reason: "an Ephemeral Droplet, or a Static one not assigned yet: its route stays",
			meta:   inactive, route: viaPublic, addrs: []netip.Prefix{own, anchor},
			want: dovm.AnchorPlan{},
		},
		"assigned, the anchor on eth0": {
			reason: "cloud-init put the anchor address on eth0: the route alone changes, and the traffic leaves from the reserved IP",
			meta:   active, route: viaPublic, addrs: []netip.Prefix{own, anchor},
			want: dovm.AnchorPlan{Commands: [][]string{switchRoute}, Egress: reserved},
		},
		"assigned, no anchor on eth0": {
			reason: "a Droplet whose network cloud-init did not write: the address first, then the route from it",
			meta:   active, route: viaPublic, addrs: []netip.Prefix{own},
			want: dovm.AnchorPlan{Commands: [][]string{{"addr", "add", "10.19.0.5/16", "dev", "eth0"}, switchRoute}, Egress: reserved},
		},
		"assigned and routed": {
			reason: "what a recheck finds: nothing to do",
			meta:   active, route: viaAnchor, addrs: []netip.Prefix{own, anchor},
			want: dovm.AnchorPlan{Egress: reserved},
		},
		"routed without the source": {
			reason: "a route through the anchor gateway that leaves from the Droplet's own address is not DigitalOcean's: its source is set",
			meta:   active, route: dovm.Route{Gateway: anchorGW, Dev: "eth0"}, addrs: []netip.Prefix{own, anchor},
			want: dovm.AnchorPlan{Commands: [][]string{switchRoute}, Egress: reserved},
		},
		"a metric": {
			reason: "a default route with a metric is replaced at its metric, not doubled",
			meta:   active, route: dovm.Route{Gateway: publicGW, Dev: "eth0", Metric: 100}, addrs: []netip.Prefix{own, anchor},
			want: dovm.AnchorPlan{Commands: [][]string{append(slices.Clone(switchRoute), "metric", "100")}, Egress: reserved},
		},
		"unassigned after": {
			reason: "the reserved IP was taken away: out by the Droplet's own gateway and address again",
			meta:   inactive, route: viaAnchor, addrs: []netip.Prefix{own, anchor},
			want: dovm.AnchorPlan{Commands: [][]string{{"route", "replace", "default", "via", "192.0.2.1", "dev", "eth0"}}},
		},
		"no default route": {
			reason: "the public interface of a Droplet is eth0",
			meta:   active, route: dovm.Route{}, addrs: []netip.Prefix{anchor},
			want: dovm.AnchorPlan{Commands: [][]string{switchRoute}, Egress: reserved},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := dovm.PlanAnchor(tc.meta, tc.route, tc.addrs)
			if diff := cmp.Diff(tc.want, got, netipComparers); diff != "" {
				t.Errorf("%s\n(-want +got):\n%s", tc.reason, diff)
			}
		})
	}
}

// TestParseRoutes: ip(8)'s JSON, as iproute2 6 prints it, read into the
// default route the kernel uses (the lowest metric) and a device's IPv4
// addresses.
func TestParseRoutes(t *testing.T) {
	routes := map[string]struct {
		out  string
		want dovm.Route
	}{
		"one":         {`[{"dst":"default","gateway":"192.0.2.1","dev":"eth0","flags":[]}]`, dovm.Route{Gateway: publicGW, Dev: "eth0"}},
		"from anchor": {`[{"dst":"default","gateway":"10.19.0.1","dev":"eth0","prefsrc":"10.19.0.5","flags":[]}]`, dovm.Route{Gateway: anchorGW, Dev: "eth0", Src: anchor.Addr()}},
		"lowest metric": {`[{"dst":"default","gateway":"192.0.2.1","dev":"eth0","metric":100,"flags":[]},{"dst":"default","gateway":"10.19.0.1","dev":"eth0","metric":50,"flags":[]}]`,
			dovm.Route{Gateway: anchorGW, Dev: "eth0", Metric: 50}},
		"none": {`[]`, dovm.Route{}},
	}
	for name, tc := range routes {
		got, err := dovm.ParseDefaultRoute([]byte(tc.out))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if diff := cmp.Diff(tc.want, got, netipComparers); diff != "" {
			t.Errorf("route %s (-want +got):\n%s", name, diff)
		}
	}
	out := `[{"ifindex":2,"ifname":"eth0","flags":["BROADCAST","MULTICAST","UP","LOWER_UP"],"mtu":1500,"addr_info":[` +
		`{"family":"inet","local":"192.0.2.2","prefixlen":24,"scope":"global","label":"eth0"},` +
		`{"family":"inet","local":"10.19.0.5","prefixlen":16,"scope":"global","label":"eth0"}]}]`
	got, err := dovm.ParseAddrs([]byte(out))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]netip.Prefix{netip.MustParsePrefix("192.0.2.2/24"), anchor}, got, netipComparers); diff != "" {
		t.Errorf("addresses (-want +got):\n%s", diff)
	}
}

// kernel is the seam's double: a default route and eth0's addresses,
// which the ip commands Anchor runs change as the kernel would, and
// which a test may change behind its back (a network restart).
type kernel struct {
	mu    sync.Mutex
	route dovm.Route
	addrs []netip.Prefix
	ran   [][]string
}

func (k *kernel) ip(_ context.Context, args ...string) ([]byte, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	switch {
	case slices.Equal(args, []string{"-j", "-4", "route", "show", "default"}):
		r := map[string]any{"dst": "default", "gateway": k.route.Gateway.String(), "dev": k.route.Dev}
		if k.route.Src.IsValid() {
			r["prefsrc"] = k.route.Src.String()
		}
		return json.Marshal([]any{r})
	case slices.Equal(args, []string{"-j", "-4", "addr", "show", "dev", "eth0"}):
		var info []any
		for _, a := range k.addrs {
			info = append(info, map[string]any{"family": "inet", "local": a.Addr().String(), "prefixlen": a.Bits()})
		}
		return json.Marshal([]any{map[string]any{"ifname": "eth0", "addr_info": info}})
	}
	k.ran = append(k.ran, args)
	switch {
	case len(args) == 5 && args[0] == "addr" && args[1] == "add":
		k.addrs = append(k.addrs, netip.MustParsePrefix(args[2]))
	case len(args) >= 7 && args[0] == "route" && args[1] == "replace":
		k.route = dovm.Route{Gateway: netip.MustParseAddr(args[4]), Dev: args[6]}
		if len(args) >= 9 && args[7] == "src" {
			k.route.Src = netip.MustParseAddr(args[8])
		}
	default:
		return nil, fmt.Errorf("unexpected ip %v", args)
	}
	return nil, nil
}

// TestAnchorRun: Anchor polls the metadata until the reserved IP is
// assigned, then switches the route once, says the egress address once,
// and from then rechecks at its slower pace, putting back a route
// something took away; with no reserved IP within its bound it stops,
// having changed nothing. Waits are counted, not slept.
func TestAnchorRun(t *testing.T) {
	poll, recheck, wait := 5*time.Second, time.Minute, 20*time.Second
	switched := [][]string{{"addr", "add", "10.19.0.5/16", "dev", "eth0"},
		{"route", "replace", "default", "via", "10.19.0.1", "dev", "eth0", "src", "10.19.0.5"}}
	cases := map[string]struct {
		reason string
		// assignAt is the read from which the reserved IP is active (0:
		// never); restartAt the wait after which a network restart puts
		// the public route back and drops the anchor address.
		assignAt, restartAt int
		// waits is how many waits the test lets pass before it ends the
		// run.
		waits        int
		wantErr      error
		wantWaits    []time.Duration
		wantRan      [][]string
		wantReported []string
	}{
		"assigned after boot": {
			reason:   "two polls without, then the switch and the recheck pace",
			assignAt: 3, waits: 4,
			wantErr:   context.Canceled,
			wantWaits: []time.Duration{poll, poll, recheck, recheck}, wantRan: switched, wantReported: []string{"203.0.113.50"},
		},
		"a network restart": {
			reason:   "the recheck puts the route back; the egress was said once and stays so",
			assignAt: 1, restartAt: 2, waits: 3,
			wantErr:   context.Canceled,
			wantWaits: []time.Duration{recheck, recheck, recheck}, wantRan: append(slices.Clone(switched), switched...), wantReported: []string{"203.0.113.50"},
		},
		"never assigned": {
			reason:    "an address that never comes: the bound's polls, then no more, nothing changed or said",
			wantErr:   dovm.ErrNoReservedIP,
			wantWaits: []time.Duration{poll, poll, poll, poll},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			reads := 0
			var mu sync.Mutex
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				reads++
				n := reads
				mu.Unlock()
				ip := ""
				if tc.assignAt > 0 && n >= tc.assignAt {
					ip = "203.0.113.50"
				}
				if r.URL.Path != "/metadata/v1.json" {
					http.NotFound(w, r)
					return
				}
				io.WriteString(w, doMetadataDoc(ip))
			}))
			defer srv.Close()
			k := &kernel{route: dovm.Route{Gateway: publicGW, Dev: "eth0"}, addrs: []netip.Prefix{netip.MustParsePrefix("192.0.2.2/24")}}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var waits []time.Duration
			var reported []string
			a := &dovm.Anchor{URL: srv.URL + "/metadata/v1.json", IP: k.ip, Poll: poll, Wait: wait, Recheck: recheck,
				Report: func(_ context.Context, egress string) error { reported = append(reported, egress); return nil },
				Sleep: func(ctx context.Context, d time.Duration) error {
					waits = append(waits, d)
					if len(waits) == tc.restartAt {
						k.mu.Lock()
						k.route, k.addrs = dovm.Route{Gateway: publicGW, Dev: "eth0"}, k.addrs[:1]
						k.mu.Unlock()
					}
					if tc.waits > 0 && len(waits) >= tc.waits {
						cancel()
					}
					return ctx.Err()
				},
				Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
			err := a.Run(ctx)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("%s\nRun: %v, want %v", tc.reason, err, tc.wantErr)
			}
			got := struct {
				Waits    []time.Duration
				Ran      [][]string
				Reported []string
			}{waits, k.ran, reported}
			want := struct {
				Waits    []time.Duration
				Ran      [][]string
				Reported []string
			}{tc.wantWaits, tc.wantRan, tc.wantReported}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("%s\n(-want +got):\n%s", tc.reason, diff)
			}
		})
	}
}

// TestFollower: the part the agent links is named Name and runs Anchor
// on the URL it is given, with the agent's seams: a reserved IP that
// never comes is the agent's ErrGaveUp (its unit ends as done), having
// changed no route and said no address.
func TestFollower(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, doMetadataDoc(""))
	}))
	defer srv.Close()
	k := &kernel{route: dovm.Route{Gateway: publicGW, Dev: "eth0"}, addrs: []netip.Prefix{netip.MustParsePrefix("192.0.2.2/24")}}
	waits := 0
	part := dovm.Part{Poll: 5 * time.Second, Wait: 10 * time.Second,
		Sleep: func(ctx context.Context, _ time.Duration) error { waits++; return ctx.Err() }}
	var reported []string
	err := part.Follow(context.Background(), srv.URL+"/metadata/v1.json", agent.FollowEnv{IP: k.ip,
		Report: func(_ context.Context, egress string) error { reported = append(reported, egress); return nil },
		Log:    slog.New(slog.NewTextHandler(io.Discard, nil))})
	if !errors.Is(err, agent.ErrGaveUp) || !errors.Is(err, dovm.ErrNoReservedIP) {
		t.Errorf("Follow: %v, want the agent's ErrGaveUp around ErrNoReservedIP", err)
	}
	got := struct {
		Name     string
		Waits    int
		Ran      [][]string
		Reported []string
	}{dovm.Follower.Name(), waits, k.ran, reported}
	if diff := cmp.Diff(struct {
		Name     string
		Waits    int
		Ran      [][]string
		Reported []string
	}{Name: "digitalocean", Waits: 2}, got); diff != "" {
		t.Errorf("the part's name, its waits, the ip commands it ran and the addresses it said (-want +got):\n%s", diff)
	}
}
