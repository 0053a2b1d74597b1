package imagetest

import (
	"context"
	"strconv"
	"testing"

	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/provider/hetzner"
	"github.com/egress-proxies/egress/internal/provider/hetzner/hetznerfake"
	"github.com/egress-proxies/egress/internal/vm/vmconfig"
)

// hetznerShape is the Hetzner-shaped boot (testCloudInit): Debian's
// cloud-init, finding its Hetzner datasource, reads the user-data the
// hetzner provider made (its Create against the Hetzner fake) from the
// stand-in of Hetzner's metadata service.
var hetznerShape = cloudShape{
	rel:          HetznerRelease,
	datasource:   "DataSourceHetzner",
	create:       hetznerCreate,
	userDataPath: "/hetzner/v1/userdata",
	// A server's /64, its configuration perSession (ipv6_test.go).
	ipv6: vmconfig.IPv6EgressPerSession,
	// The SMBIOS a Hetzner server's firmware gives (hetznerimage.go).
	firmware: func(id string) map[string]string {
		return map[string]string{DMIDir + "/sys_vendor": "Hetzner\n", DMIDir + "/product_serial": id + "\n"}
	},
}

// hetznerCreate makes the server with the hetzner provider against the
// Hetzner fake and sets the metadata stand-in up to serve it. It returns
// the server's id, which the firmware's serial number is.
func hetznerCreate(t *testing.T, ctx context.Context, r *run, create func(provider.Provider, provider.Placement) string) string {
	t.Helper()
	const token = "image-test-hetzner-token"
	fake := hetznerfake.New(token)
	t.Cleanup(fake.Close)
	renderer, prober := cloudVMSide(t, r, false)
	p, err := hetzner.New(hetzner.NewClient(token, fake.Endpoint(), nil), hetzner.Config{Renderer: renderer, Prober: prober})
	if err != nil {
		t.Fatal(err)
	}
	id := create(p, provider.Placement{Region: "eu-central", Zone: "fsn1"})
	servers := fake.Servers()
	if len(servers) != 1 {
		t.Fatalf("the Hetzner fake holds %d servers, want 1", len(servers))
	}
	serverID := strconv.FormatInt(servers[0].ID, 10)
	if id != "hcloud://"+serverID {
		t.Fatalf("Create returned %s, want hcloud://%s", id, serverID)
	}
	r.cloud.userData = fake.UserData(servers[0].ID)
	r.cloud.metadata = &HetznerMetadata{ID: serverID, Hostname: r.instance, UserData: r.cloud.userData}
	return serverID
}
