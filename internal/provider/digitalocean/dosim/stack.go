package dosim

import (
	"context"
	"maps"
	"net"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/digitalocean/godo"
	"github.com/google/go-cmp/cmp"
	"github.com/google/uuid"

	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/provider/digitalocean"
	"github.com/egress-proxies/egress/internal/provider/digitalocean/dofake"
	"github.com/egress-proxies/egress/internal/provider/providerstack"
)

// Stack is DigitalOcean's part of the local stack's end-to-end test: the
// DigitalOcean fake (startFake), which the stack's digitalocean provider
// is pointed at (DIGITALOCEAN_ENDPOINT) and makes the deployment's cloud
// firewall on from the stack's PROXY_PORTS and FIREWALL_SOURCE_RANGES,
// and issue 44's flow over it (TestEndToEnd/Flows/DigitalOcean), checked
// with godo.
var Stack = providerstack.New(digitalocean.Type, "DigitalOcean", startFake, flow)

// doDeployment is the stack's deployment, the value of the
// egress-deployment tag of its Droplets and the name in its firewall's.
const doDeployment = provider.DefaultDeployment

// doAPI is DigitalOcean's own Go client (godo) against the stack's
// DigitalOcean fake: there is no doctl in Debian, and the fake is held to
// DigitalOcean's OpenAPI description (TestDigitalOceanAgainstItsOpenAPI),
// so godo is the client a user's own tool would be.
type doAPI struct{ c *godo.Client }

func newDOAPI(t *testing.T, endpoint string) doAPI {
	t.Helper()
	// No proxy of the environment between the test and the fake.
	c, err := digitalocean.NewClient(digitalocean.LocalToken, endpoint, &http.Client{Transport: &http.Transport{}, Timeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return doAPI{c}
}

// droplets are the account's Droplets not being destroyed (the API lists
// one "archive" while it destroys it), of tag if one is given, by name.
func (d doAPI) droplets(t *testing.T, tag ...string) map[string]godo.Droplet {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out := map[string]godo.Droplet{}
	opt := &godo.ListOptions{PerPage: 200}
	for {
		var page []godo.Droplet
		var resp *godo.Response
		var err error
		if len(tag) > 0 {
			page, resp, err = d.c.Droplets.ListByTag(ctx, tag[0], opt)
		} else {
			page, resp, err = d.c.Droplets.List(ctx, opt)
		}
		if err != nil {
			t.Fatalf("godo: list Droplets %v: %v", tag, err)
		}
		for _, dr := range page {
			if dr.Status != "archive" {
				out[dr.Name] = dr
			}
		}
		if resp.Links == nil || resp.Links.IsLastPage() {
			return out
		}
		p, err := resp.Links.CurrentPage()
		if err != nil {
			t.Fatal(err)
		}
		opt.Page = p + 1
	}
}

// reservedIPs are the account's reserved IPs.
func (d doAPI) reservedIPs(t *testing.T) []godo.ReservedIP {
	t.Helper()
	ips, _, err := d.c.ReservedIPs.List(context.Background(), &godo.ListOptions{PerPage: 200})
	if err != nil {
		t.Fatalf("godo: list reserved IPs: %v", err)
	}
	return ips
}

// records are the account's tags that record a reserved IP's owner
// (egress-reserved-ip:ADDRESS:CREATED:DEPLOYMENT:UID).
func (d doAPI) records(t *testing.T) []string {
	t.Helper()
	return d.tags(t, "egress-reserved-ip:")
}

// tags are the account's tags that begin with prefix.
func (d doAPI) tags(t *testing.T, prefix string) []string {
	t.Helper()
	tags, _, err := d.c.Tags.List(context.Background(), &godo.ListOptions{PerPage: 200})
	if err != nil {
		t.Fatalf("godo: list tags: %v", err)
	}
	var out []string
	for _, tag := range tags {
		if strings.HasPrefix(tag.Name, prefix) {
			out = append(out, tag.Name)
		}
	}
	return out
}

// flow is issue 44's local-stack flow on the DigitalOcean
// fake: the provider has made the deployment's cloud firewall from the
// stack's PROXY_PORTS and ranges; the CLI makes a digitalocean proxy that
// becomes Ready (its Droplet's engine answers the stack's status request
// through the proxy port) and serves a request, and its access line is
// pulled; godo lists its Droplet with the deployment's tags, behind the
// firewall; deleted, it leaves no Droplet and no reserved IP; a Static
// proxy is reached at its reserved IP, and deleted leaves no Droplet, no
// reserved IP and no record of one; a Droplet godo makes with the tags
// and no proxy is collected after the grace period, and one of another
// deployment is not.
func flow(t *testing.T, s providerstack.Stack, fake *dofake.Server) {
	api := newDOAPI(t, fake.Endpoint())
	ns := []string{"--namespace", s.Namespace()}
	_, targetPort := s.Create(t, "droplet", digitalocean.Type, "ams")

	listed := api.droplets(t, digitalocean.ManagedTag)
	if len(listed) != 1 {
		t.Fatalf("godo ListByTag %s: %v, want the proxy's Droplet alone", digitalocean.ManagedTag, slices.Sorted(maps.Keys(listed)))
	}
	var uid string
	var dropletID int
	for _, dr := range listed {
		dropletID = dr.ID
		labels := digitalocean.Labels(dr.Tags)
		uid = labels[provider.LabelUID]
		// The Droplet's own tag, egress-droplet:DEPLOYMENT:UID:ID:CREATED,
		// is no label: it holds the status id, the Droplet's own (a hash
		// of its create attempt), whose shape is what can be known here.
		own := regexp.MustCompile(`^egress-droplet:` + doDeployment + `:` + uid + `:[0-9a-f]{32}:[0-9]+$`)
		owns := slices.ContainsFunc(dr.Tags, own.MatchString)
		want := map[string]string{"proxy-operator-managed": "true", "proxy-operator-uid": uid, "egress-deployment": doDeployment, "egress-proxy-port": "3128"}
		region := ""
		if dr.Region != nil {
			region = dr.Region.Slug
		}
		// ams2 is closed to new Droplets: the metro's open region is ams3.
		if diff := cmp.Diff(want, labels); diff != "" || dr.Status != "active" || region != "ams3" || len(dr.Tags) != len(want)+1 ||
			!regexp.MustCompile(`^[0-9a-f-]{36}$`).MatchString(uid) || !owns {
			t.Errorf("the proxy's Droplet %s is %s in %q with tags %q (-want +got labels):\n%s", dr.Name, dr.Status, region, dr.Tags, diff)
		}
	}
	firewall(t, api, fake, dropletID)

	// Issue 32's access line, pulled from the Droplet through its proxy
	// port when a collector tick asks, as from a Hetzner server.
	want := providerstack.Access{Labels: map[string]string{"uid": uid, "namespace": s.Namespace(), "name": "droplet"},
		Line: providerstack.AccessLine{Method: "GET", Host: "127.0.0.1", Port: targetPort, Status: 200}}
	providerstack.WaitFor(t, 30*time.Second, "the request's access line in the stack's log", func() bool {
		return slices.ContainsFunc(s.Accesses(t), func(e providerstack.Access) bool { return cmp.Equal(want, e) })
	})

	s.CLI(t, append([]string{"proxies", "delete", "droplet", "--wait", "--timeout", "90s"}, ns...)...)
	providerstack.WaitFor(t, time.Minute, "godo's list of Droplets to be empty", func() bool { return len(api.droplets(t)) == 0 })
	if ips := api.reservedIPs(t); len(ips) != 0 {
		t.Errorf("godo: reserved IPs after an Ephemeral proxy's deletion: %+v, want none", ips)
	}
	// Nor its Droplet's own tags: DigitalOcean keeps a tag that tags
	// nothing, and every listing reads them all.
	if left := append(api.tags(t, "egress-droplet:"), api.tags(t, "proxy-operator-uid:"+uid)...); len(left) != 0 {
		t.Errorf("godo: the deleted proxy's own tags are left: %q, want none", left)
	}

	// A Static proxy is reached at a reserved IP assigned to its Droplet,
	// whose owner is written in a record tag (reserved IPs carry no tag);
	// deleted, it leaves no Droplet, no reserved IP and no record.
	static, _ := s.Create(t, "reserved", digitalocean.Type, "ams", "--ip-policy", "Static")
	host, _, _ := net.SplitHostPort(static.Status.Endpoint)
	droplets := api.droplets(t, digitalocean.ManagedTag)
	ips := api.reservedIPs(t)
	assigned := len(ips) == 1 && ips[0].Droplet != nil && slices.ContainsFunc(slices.Collect(maps.Values(droplets)), func(d godo.Droplet) bool { return d.ID == ips[0].Droplet.ID })
	if len(droplets) != 1 || len(ips) != 1 || ips[0].IP != host || !assigned {
		t.Errorf("the Static proxy at %s: Droplets %v, reserved IPs %+v; want its Droplet alone, and one reserved IP, its endpoint's, assigned to it",
			static.Status.Endpoint, slices.Sorted(maps.Keys(droplets)), ips)
	}
	if records := api.records(t); len(records) != 1 {
		t.Errorf("godo: the reserved IP's record tags %q, want one", records)
	}
	s.CLI(t, append([]string{"proxies", "delete", "reserved", "--wait", "--timeout", "90s"}, ns...)...)
	providerstack.WaitFor(t, time.Minute, "the Static proxy's Droplet and reserved IP to be gone", func() bool {
		return len(api.droplets(t)) == 0 && len(api.reservedIPs(t)) == 0
	})
	if records := api.records(t); len(records) != 0 {
		t.Errorf("godo: record tags after the Static proxy's deletion: %q, want none", records)
	}

	// An orphan of this deployment, and a Droplet of another, made as the
	// provider tags its own (the tags' encoding is the provider's).
	create := func(name, deployment string) {
		_, _, err := api.c.Droplets.Create(context.Background(), &godo.DropletCreateRequest{Name: name, Region: "ams3", Size: digitalocean.DefaultSize,
			Image: godo.DropletCreateImage{Slug: digitalocean.DefaultImage},
			Tags:  []string{digitalocean.ManagedTag, digitalocean.Tag(provider.LabelUID, uuid.NewString()), digitalocean.DeploymentTag(deployment)}})
		if err != nil {
			t.Fatalf("godo: create Droplet %s: %v", name, err)
		}
	}
	create("orphan-of-egress", doDeployment)
	create("droplet-of-staging", "staging")
	providerstack.WaitFor(t, time.Minute, "the orphan to be collected", func() bool { _, ok := api.droplets(t)["orphan-of-egress"]; return !ok })
	// Several collector runs later (GC_INTERVAL=1s), the other
	// deployment's Droplet is there still.
	time.Sleep(3 * time.Second)
	staging, ok := api.droplets(t)["droplet-of-staging"]
	if !ok {
		t.Fatalf("the collector deleted a Droplet of another deployment")
	}
	if _, err := api.c.Droplets.Delete(context.Background(), staging.ID); err != nil {
		t.Errorf("godo: delete Droplet %d: %v", staging.ID, err)
	}
}

// firewall checks the deployment's cloud firewall the provider
// made on the fake: applied by the deployment's tag, so the proxy's
// Droplet is behind it; each of the stack's PROXY_PORTS (3128 and 1080)
// open over TCP to FIREWALL_SOURCE_RANGES (the default, everywhere) and
// to the status request's source against a fake (127.0.0.1/32), and over
// UDP to FIREWALL_SOURCE_RANGES alone.
func firewall(t *testing.T, api doAPI, fake *dofake.Server, dropletID int) {
	t.Helper()
	fws, _, err := api.c.Firewalls.List(context.Background(), &godo.ListOptions{PerPage: 200})
	if err != nil {
		t.Fatalf("godo: list firewalls: %v", err)
	}
	type rule struct {
		Protocol, Ports string
		Sources         []string
	}
	type firewall struct {
		Name    string
		Tags    []string
		Inbound []rule
	}
	var got []firewall
	for _, fw := range fws {
		f := firewall{Name: fw.Name, Tags: fw.Tags}
		for _, r := range fw.InboundRules {
			var sources []string
			if r.Sources != nil {
				sources = slices.Sorted(slices.Values(r.Sources.Addresses))
			}
			f.Inbound = append(f.Inbound, rule{r.Protocol, r.PortRange, sources})
		}
		got = append(got, f)
	}
	sources := []string{"0.0.0.0/0", "127.0.0.1/32", "::/0"}
	// UDP (SOCKS5's relay) from the tenants' ranges alone.
	tenants := []string{"0.0.0.0/0", "::/0"}
	want := []firewall{{Name: "egress-proxy-allow-" + doDeployment, Tags: []string{"egress-deployment:" + doDeployment},
		Inbound: []rule{{"tcp", "3128", sources}, {"tcp", "1080", sources}, {"udp", "3128", tenants}, {"udp", "1080", tenants}}}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("godo: the firewalls (-want +got):\n%s", diff)
	}
	if behind := fake.Behind(dropletID); !slices.Equal(behind, []string{"egress-proxy-allow-" + doDeployment}) {
		t.Errorf("the proxy's Droplet %d is behind the firewalls %q, want the deployment's", dropletID, behind)
	}
}

// startFake starts the stack's DigitalOcean fake, its Droplets booting
// their engines on loopback addresses from the user-data the stack
// renders, and returns it with the stack's variable for it.
func startFake(t *testing.T) (*dofake.Server, []string) {
	t.Helper()
	f := dofake.New(digitalocean.LocalToken)
	// The stack runs the collector every second (GC_INTERVAL=1s), where a
	// deployment runs it every minute (GC_INTERVAL's default): its calls
	// come sixty times as often, so the fake's limits are sixty times
	// DigitalOcean's, the calls a deployment's minute and hour would see.
	// At DigitalOcean's own 250 a minute the flow's collector was refused
	// within a minute (and what issue 48 paces is a burst, not this).
	f.SetRateLimit(time.Minute, 60*dofake.DefaultMinuteRateLimit, 0)
	f.SetRateLimit(time.Hour, 60*dofake.DefaultRateLimit, 0)
	f.StartServing(dofake.Serve{AllowDestinations: []string{"127.0.0.1/32"}, Tick: 500 * time.Millisecond})
	t.Cleanup(f.Close)
	return f, []string{digitalocean.Plugin.FakeEndpoint + "=" + f.Endpoint()}
}
