// Package hetznerimage is the Hetzner-shaped boot of the image test
// (internal/vm/imagetest, make image-test): a Debian 13 as Hetzner's
// debian-13 image has it (Release, image.go), whose cloud-init reads the
// user-data the hetzner provider made against the Hetzner fake from a
// stand-in of Hetzner's metadata service (Metadata, metadata.go), on a
// server's IPv6 /64 (Shape, shape.go). The plugin names it (ImageTest),
// and the image test finds it in the list make docs writes; nothing here
// is used by production code.
package hetznerimage

import (
	"context"
	"strconv"
	"testing"

	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/provider/hetzner"
	"github.com/egress-proxies/egress/internal/provider/hetzner/hetznerfake"
	"github.com/egress-proxies/egress/internal/vm/imagetest"
	"github.com/egress-proxies/egress/internal/vm/vmconfig"
)

// Shape is the Hetzner-shaped boot: Debian's cloud-init, finding its
// Hetzner datasource, reads the user-data the hetzner provider made (its
// Create against the Hetzner fake) from the stand-in of Hetzner's
// metadata service.
var Shape = imagetest.Shape{
	Release:      Release,
	Datasource:   "DataSourceHetzner",
	UserDataPath: "/hetzner/v1/userdata",
	// A server's /64, its configuration perSession (the image test's
	// IPv6 checks).
	IPv6:   vmconfig.IPv6EgressPerSession,
	Create: create,
}

// create makes the server with the hetzner provider against the Hetzner
// fake and sets the metadata stand-in up to serve it. The VM's id is the
// server's, which the firmware's serial number is.
func create(t *testing.T, ctx context.Context, h imagetest.Harness) *imagetest.VM {
	t.Helper()
	const token = "image-test-hetzner-token"
	fake := hetznerfake.New(token)
	t.Cleanup(fake.Close)
	renderer, prober := h.VMSide(t)
	p, err := hetzner.New(hetzner.NewClient(token, fake.Endpoint(), nil), hetzner.Config{Renderer: renderer, Prober: prober})
	if err != nil {
		t.Fatal(err)
	}
	id := h.Create(p, provider.Placement{Region: "eu-central", Zone: "fsn1"})
	servers := fake.Servers()
	if len(servers) != 1 {
		t.Fatalf("the Hetzner fake holds %d servers, want 1", len(servers))
	}
	serverID := strconv.FormatInt(servers[0].ID, 10)
	if id != "hcloud://"+serverID {
		t.Fatalf("Create returned %s, want hcloud://%s", id, serverID)
	}
	userData := fake.UserData(servers[0].ID)
	return &imagetest.VM{
		ID:       serverID,
		UserData: userData,
		Metadata: &Metadata{ID: serverID, Hostname: h.Instance(), UserData: userData},
		// The SMBIOS a Hetzner server's firmware gives (image.go).
		Firmware: map[string]string{imagetest.DMIDir + "/sys_vendor": "Hetzner\n", imagetest.DMIDir + "/product_serial": serverID + "\n"},
	}
}
