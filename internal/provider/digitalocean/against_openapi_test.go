package digitalocean

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/digitalocean/godo"
	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/internal/pricing"
	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/provider/digitalocean/dofake"
)

// TestDigitalOceanAgainstItsOpenAPI holds the provider and its fake to
// DigitalOcean's published API description (testdata, README.md there):
// through a lifecycle of every kind of call the provider makes, each
// request it sends and each answer the fake writes is checked, and each
// operation the provider uses was seen; and the check is shown to refuse
// a wrong field planted in an answer or a request. (Every other test of
// the package runs its traffic through the same check: newEnv.)
func TestDigitalOceanAgainstItsOpenAPI(t *testing.T) {
	t.Run("Lifecycle", func(t *testing.T) {
		e := newEnv(t)
		ctx := context.Background()
		static := request()
		static.StaticIP = true
		id, err := e.p.Create(ctx, static)
		if err != nil {
			t.Fatal(err)
		}
		e.p.Create(ctx, static) // adopted
		e.fake.Settle()
		e.st.Set(static.UID, Status{Ready: true})
		e.p.Get(ctx, id) // reserves
		in, err := e.p.Get(ctx, id)
		if err != nil || in.AddressID == "" {
			t.Fatalf("the Static proxy's Droplet: %+v, %v", in, err)
		}
		e.p.Get(ctx, in.AddressID)
		e.p.ListByTag(ctx)
		e.p.Delete(ctx, id)
		e.fake.Settle()
		next, err := e.p.Create(ctx, static)
		if err != nil {
			t.Fatal(err)
		}
		e.fake.Settle()
		e.p.Get(ctx, next) // assigns
		e.p.Delete(ctx, next)
		e.fake.Settle()
		e.p.Delete(ctx, in.AddressID)
		// A Delete cut after the destroy leaves its Droplet's tags, a
		// residue ListByTag lists: read, deleted, deleted again (its tags
		// gone: 404), read again (404).
		cut := another("cccccccc")
		cutID, err := e.p.Create(ctx, cut)
		if err != nil {
			t.Fatal(err)
		}
		e.fake.Settle()
		e.fake.Fail("tags.delete", 1, dofake.Status(500))
		e.p.Delete(ctx, cutID)
		e.fake.Settle()
		list, _ := e.p.ListByTag(ctx)
		if len(list) != 1 || !strings.HasPrefix(list[0].ID, tagPrefix) {
			t.Fatalf("ListByTag after a Delete cut before the tags: %+v, want the residue alone", list)
		}
		e.p.Get(ctx, list[0].ID)
		e.p.Delete(ctx, list[0].ID)
		e.p.Delete(ctx, list[0].ID)
		e.p.Get(ctx, list[0].ID)
		// The refusals are answers too: a full region, the Droplet limit,
		// the rate limit, a Droplet not there.
		e.fake.FailCreates("", 1, dofake.SizeUnavailable())
		e.p.Create(ctx, another("aaaaaaaa"))
		e.fake.SetDropletLimit(1)
		e.fake.Put("someone-else", "nyc1", nil)
		e.p.Create(ctx, another("bbbbbbbb"))
		e.fake.SetRateLimit(time.Hour, 1, 1)
		e.p.ListByTag(ctx)
		e.fake.SetRateLimit(time.Hour, 5000, 0)
		e.p.Get(ctx, dropletID(1))
		// The prices: GET /v2/sizes.
		if _, _, err := (Prices{Client: e.p.c}).Prices(ctx, []pricing.Key{{Provider: Type, Region: "ams", Zone: "ams3", MachineType: DefaultSize}}); err != nil {
			t.Fatal(err)
		}
		want := []string{"account_get", "droplets_create", "droplets_destroy", "droplets_get", "droplets_list",
			"firewalls_create", "firewalls_list", "reservedIPsActions_post", "reservedIPs_create", "reservedIPs_delete",
			"reservedIPs_get", "reservedIPs_list", "sizes_list", "tags_create", "tags_delete", "tags_get", "tags_list"}
		if diff := cmp.Diff(want, e.check.Operations()); diff != "" {
			t.Errorf("the operations whose answers were checked (-want +got):\n%s", diff)
		}
		checked := e.check.Checked()
		var requests, answers int
		for k, n := range checked {
			if strings.HasPrefix(k, "request ") {
				requests += n
			} else {
				answers += n
			}
		}
		for _, status := range []string{"droplets_create 202", "droplets_create 422", "droplets_get 404", "droplets_list 429", "droplets_destroy 204", "reservedIPs_create 202", "reservedIPsActions_post 201", "tags_create 201",
			"tags_delete 204", "tags_delete 404", "tags_delete 500", "tags_get 200", "tags_get 404", "request tags_delete", "request tags_get"} {
			if checked[status] == 0 {
				t.Errorf("no %q answer was checked: %v", status, checked)
			}
		}
		t.Logf("checked %d requests and %d answers against the description: %v", requests, answers, checked)
	})

	// Each plant is a field DigitalOcean's description says the API never
	// writes or takes; the check must refuse each, naming the field.
	t.Run("PlantedWrongField", func(t *testing.T) {
		answers := map[string]struct {
			reason string
			route  string
			plant  func(body map[string]any)
			call   func(p *Provider, id string)
			field  string
		}{
			"DropletStatus": {"a status the enum lacks", "droplets.get",
				func(b map[string]any) { b["droplet"].(map[string]any)["status"] = "running" },
				func(p *Provider, id string) { p.Get(context.Background(), id) }, "status"},
			"DropletWithoutNetworks": {"a required field left out", "droplets.list",
				func(b map[string]any) {
					for _, d := range b["droplets"].([]any) {
						delete(d.(map[string]any), "networks")
					}
				},
				func(p *Provider, _ string) { p.ListByTag(context.Background()) }, "networks"},
			"DropletIDAsText": {"an id of the wrong type", "droplets.get",
				func(b map[string]any) { b["droplet"].(map[string]any)["id"] = "123" },
				func(p *Provider, id string) { p.Get(context.Background(), id) }, "id"},
			"TagName": {"a tag name out of the tag alphabet", "tags.list",
				func(b map[string]any) { b["tags"] = []any{map[string]any{"name": "egress deployment"}} },
				func(p *Provider, _ string) { p.ListByTag(context.Background()) }, "name"},
			"RegionSlug": {"a region the description does not know", "droplets.get",
				func(b map[string]any) {
					b["droplet"].(map[string]any)["image"].(map[string]any)["regions"] = []any{"mars1"}
				},
				func(p *Provider, id string) { p.Get(context.Background(), id) }, "regions"},
			"SizePriceAsText": {"a size's price_hourly as a string", "sizes.list",
				func(b map[string]any) { b["sizes"].([]any)[0].(map[string]any)["price_hourly"] = "0.00893" },
				func(p *Provider, _ string) {
					(Prices{Client: p.c}).Prices(context.Background(), []pricing.Key{{Provider: Type, MachineType: DefaultSize}})
				}, "price_hourly"},
			"SizeWithoutTransfer": {"a size without its transfer", "sizes.list",
				func(b map[string]any) { delete(b["sizes"].([]any)[0].(map[string]any), "transfer") },
				func(p *Provider, _ string) {
					(Prices{Client: p.c}).Prices(context.Background(), []pricing.Key{{Provider: Type, MachineType: DefaultSize}})
				}, "transfer"},
			"ErrorWithoutID": {"an error body without its id", "droplets.get",
				func(b map[string]any) { delete(b, "id") },
				func(p *Provider, _ string) { p.Get(context.Background(), dropletID(1)) }, "id"},
		}
		for name, tc := range answers {
			t.Run(name, func(t *testing.T) {
				e := newEnv(t)
				var refused []error
				var mu sync.Mutex
				e.check.report = func(err error) { mu.Lock(); defer mu.Unlock(); refused = append(refused, err) }
				id, err := e.p.Create(context.Background(), request())
				if err != nil || len(refused) != 0 {
					t.Fatalf("the create before the plant: %v, refused %v", err, refused)
				}
				e.fake.Tamper(tc.route, tc.plant)
				tc.call(e.p, id)
				if len(refused) == 0 {
					t.Fatalf("%s: the planted answer passed the check", tc.reason)
				}
				if msg := refused[0].Error(); !strings.Contains(msg, `"`+tc.field+`"`) && !strings.Contains(msg, "/"+tc.field) {
					t.Errorf("%s: the refusal does not name %q:\n%.600s", tc.reason, tc.field, msg)
				}
				t.Logf("%s: %d refusal(s), the first: %.160s", tc.reason, len(refused), firstLine(refused[0]))
			})
		}
		requests := map[string]struct {
			reason string
			send   func(c *godo.Client) error
			field  string
		}{
			"FirewallRuleWithoutPorts": {"an ICMP rule without ports, as the provider first wrote it", func(c *godo.Client) error {
				fw := testFirewall.Request("egress")
				fw.OutboundRules[2].PortRange = ""
				_, _, err := c.Firewalls.Create(context.Background(), fw)
				return err
			}, "ports"},
			"FirewallProtocol": {"a protocol the enum lacks", func(c *godo.Client) error {
				fw := testFirewall.Request("egress")
				fw.InboundRules[0].Protocol = "sctp"
				_, _, err := c.Firewalls.Create(context.Background(), fw)
				return err
			}, "protocol"},
			"TagName": {"a tag name with a space", func(c *godo.Client) error {
				_, _, err := c.Tags.Create(context.Background(), &godo.TagCreateRequest{Name: "egress deployment"})
				return err
			}, "name"},
			"TagDeleteName": {"a tag name with a space in a delete's path", func(c *godo.Client) error {
				_, err := c.Tags.Delete(context.Background(), "egress deployment")
				return err
			}, "tag_id"},
			"PerPage": {"a page larger than the API's", func(c *godo.Client) error {
				_, _, err := c.Droplets.List(context.Background(), &godo.ListOptions{PerPage: 500})
				return err
			}, "per_page"},
			"ReservedIPAction": {"an action type the enum lacks", func(c *godo.Client) error {
				req, _ := c.NewRequest(context.Background(), http.MethodPost, "v2/reserved_ips/203.0.113.9/actions", map[string]any{"type": "move", "droplet_id": 1})
				_, err := c.Do(context.Background(), req, nil)
				return err
			}, "type"},
		}
		for name, tc := range requests {
			t.Run("Request"+name, func(t *testing.T) {
				e := newEnv(t)
				var refused []error
				var mu sync.Mutex
				e.check.report = func(err error) { mu.Lock(); defer mu.Unlock(); refused = append(refused, err) }
				tc.send(e.p.c)
				var asked []error
				for _, err := range refused {
					if strings.Contains(err.Error(), "the request breaks") {
						asked = append(asked, err)
					}
				}
				if len(asked) == 0 {
					t.Fatalf("%s: the planted request passed the check (refusals: %v)", tc.reason, refused)
				}
				if msg := asked[0].Error(); !strings.Contains(msg, tc.field) {
					t.Errorf("%s: the refusal does not name %q:\n%.600s", tc.reason, tc.field, msg)
				}
				t.Logf("%s: refused: %.160s", tc.reason, firstLine(asked[0]))
			})
		}
	})

	// The check itself passes what DigitalOcean's own answers look like:
	// a plant that stays inside the description (a Droplet powered off)
	// is not refused.
	t.Run("RightFieldPasses", func(t *testing.T) {
		e := newEnv(t)
		id, err := e.p.Create(context.Background(), request())
		if err != nil {
			t.Fatal(err)
		}
		e.fake.Tamper("droplets.get", func(b map[string]any) { b["droplet"].(map[string]any)["status"] = "off" })
		if in, err := e.p.Get(context.Background(), id); err != nil || in.State != provider.StateStopped {
			t.Errorf("an answer of an off Droplet: %+v, %v; want Stopped, unrefused", in, err)
		}
	})
}

func firstLine(err error) string {
	line, _, _ := strings.Cut(err.Error(), "\n")
	return line
}
