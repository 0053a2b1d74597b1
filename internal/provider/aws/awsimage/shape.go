// Package awsimage is the EC2-shaped boot of the image test
// (internal/vm/imagetest, make image-test): a Debian 13 as Debian's AWS
// image has it (Release, image.go), whose cloud-init reads the user-data
// the aws provider made against the EC2 fake from AWS's own metadata
// mock, with an IMDSv2 token (Metadata, metadata.go, in front of
// package imdsmock), on a delegated IPv6 /80 (Shape, shape.go). The
// plugin names it (ImageTest), and the image test finds it in the list
// make docs writes; nothing here is used by production code.
package awsimage

import (
	"context"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/netip"
	"strings"
	"testing"

	sdkaws "github.com/aws/aws-sdk-go-v2/aws"

	"github.com/egress-proxies/egress/internal/provider"
	awsprovider "github.com/egress-proxies/egress/internal/provider/aws"
	"github.com/egress-proxies/egress/internal/provider/aws/ec2fake"
	"github.com/egress-proxies/egress/internal/vm/imagetest"
	"github.com/egress-proxies/egress/internal/vm/imds"
	"github.com/egress-proxies/egress/internal/vm/imds/imdsmock"
	"github.com/egress-proxies/egress/internal/vm/vmconfig"
)

// The EC2 instance's placement in the boot.
const (
	ec2Region = "eu-west-1"
	ec2Zone   = "eu-west-1b"
)

// Shape is the EC2-shaped boot: Debian's cloud-init, finding its Ec2
// datasource, reads the user-data the aws provider made (its Create
// against the EC2 fake) from AWS's own metadata mock, with an IMDSv2
// token, and the agent asks it, with a token of its own, which instance
// it is. Its configuration is perSession, so the instance is launched in
// a dual-stack subnet with an IPv6 address and a delegated /80 apart
// from it, which the topology routes to the VM (RouteDelegated) and the
// agent reads from IMDS: the IPv6 checks run on that /80.
var Shape = imagetest.Shape{
	Release:      Release,
	Datasource:   "DataSourceEc2",
	UserDataPath: "/latest/user-data",
	IPv6:         vmconfig.IPv6EgressPerSession,
	RouteIPv6:    (*imagetest.Topology).RouteIPv6ToEC2,
	Create:       create,
}

// create makes the instance with the aws provider against the EC2 fake,
// in a dual-stack subnet, routes its delegated /80 to the VM, and starts
// AWS's metadata mock to serve it: the instance's id, zone, region, the
// user-data it was launched with and the /80. The VM's id is the
// instance's.
func create(t *testing.T, ctx context.Context, h imagetest.Harness) *imagetest.VM {
	t.Helper()
	fake := ec2fake.New()
	t.Cleanup(fake.Close)
	renderer, prober := h.VMSide(t)
	// The composition root's renderer for the plugin's boot
	// (internal/app's cloudInitVM): compressed, naming IMDS, with the
	// plugin's prefix length, by which the VM finds its /80.
	boot := awsprovider.Plugin.Boot
	renderer.Gzip, renderer.IMDS, renderer.IPv6PrefixLength = boot.Gzip, boot.MetadataURL, awsprovider.Plugin.IPv6Prefix
	// A key of no account: the fake reads the signature's scope only.
	creds := sdkaws.CredentialsProviderFunc(func(context.Context) (sdkaws.Credentials, error) {
		return sdkaws.Credentials{AccessKeyID: "EGRESS-IMAGETEST", SecretAccessKey: "not-a-secret", Source: "image test"}, nil
	})
	// A dual-stack subnet: EC2 delegates prefixes only there.
	fake.SetIPv6Subnet(ec2Zone)
	p, err := awsprovider.New(awsprovider.NewClient(awsprovider.ClientOptions{Credentials: creds, Endpoint: fake.Endpoint()}),
		awsprovider.Config{Regions: []string{ec2Region}, Renderer: renderer, Prober: prober})
	if err != nil {
		t.Fatal(err)
	}
	id := h.Create(p, provider.Placement{Region: ec2Region, Zone: ec2Zone})
	instances := fake.Instances()
	if len(instances) != 1 {
		t.Fatalf("the EC2 fake holds %d instances, want 1", len(instances))
	}
	in := instances[0]
	if want := "aws://" + ec2Region + "/" + in.ID; id != want {
		t.Fatalf("Create returned %s, want %s", id, want)
	}
	if in.MetadataOptions["HttpTokens"] != "required" {
		t.Fatalf("the instance was launched with HttpTokens %q, want required: the mock plays IMDSv2 only", in.MetadataOptions["HttpTokens"])
	}
	if len(in.IPv6Addresses) != 1 || len(in.IPv6Prefixes) != 1 {
		t.Fatalf("the instance was launched with IPv6 addresses %v and prefixes %v, want one of each", in.IPv6Addresses, in.IPv6Prefixes)
	}
	// Its own address is of the subnet's /64; the /80 is routed to it.
	addr, prefix := netip.MustParseAddr(in.IPv6Addresses[0]), netip.MustParsePrefix(in.IPv6Prefixes[0])
	if prefix.Contains(addr) {
		t.Fatalf("the EC2 fake delegated %s around the instance's address %s: the test could not tell IMDS's prefix from one taken around the address", prefix, addr)
	}
	if err := h.Topology().RouteDelegated(netip.PrefixFrom(addr, 64), prefix); err != nil {
		t.Fatal(err)
	}
	// The mock logs every request with the standard logger.
	log.SetOutput(io.Discard)
	base, err := imdsmock.Start(ctx, t.TempDir(), imdsmock.Config{InstanceID: in.ID, Zone: in.Zone, Region: ec2Region, Hostname: h.Instance(),
		ImageID: in.ImageID, InstanceType: in.Type, PrivateIP: in.PrivateIP, UserData: []byte(in.UserData), MAC: ec2MAC, IPv6Prefixes: in.IPv6Prefixes})
	if err != nil {
		t.Fatal(err)
	}
	front, err := NewMetadata(base)
	if err != nil {
		t.Fatal(err)
	}
	return &imagetest.VM{
		ID:         in.ID,
		UserData:   in.UserData,
		Metadata:   front,
		IPv6Prefix: prefix,
		// The SMBIOS a Nitro instance's firmware gives (image.go): a
		// system-uuid that starts with ec2.
		Firmware: map[string]string{imagetest.DMIDir + "/sys_vendor": "Amazon EC2\n", imagetest.DMIDir + "/product_uuid": "ec2e1916-9099-7caf-fd21-012345abcdef\n"},
		Checks: func(check imagetest.Check, ctx context.Context, c *imagetest.Container) {
			check("the status names the instance and zone the agent read from IMDSv2", func(t *testing.T) { imagetest.CheckIdentity(t, ctx, h, in.ID, in.Zone) })
			check("IMDS refuses a read without a token (IMDSv2 only)", func(t *testing.T) { checkIMDSv2Only(t, ctx, c) })
			check("the agent read the delegated /80 from IMDS", func(t *testing.T) { checkPrefixFromIMDS(t, front) })
		},
	}
}

// ec2MAC is the instance's primary interface's MAC in IMDS.
const ec2MAC = "0e:49:61:0f:c3:11"

// checkPrefixFromIMDS: the agent asked IMDS for the prefixes delegated
// to the primary interface (the path the mock lacks, served in front of
// it after the mock took the token): what its configuration names, since
// no address on the VM says the /80.
func checkPrefixFromIMDS(t *testing.T, m *Metadata) {
	path := "/latest/meta-data/" + fmt.Sprintf(imds.PathIPv6PrefixOf, ec2MAC)
	n := 0
	for _, req := range m.Requests() {
		if req.Method == http.MethodGet && req.URI == path {
			n++
		}
	}
	if n == 0 {
		t.Errorf("IMDS saw no GET %s", path)
	}
}

// checkIMDSv2Only: on the VM, a plain GET of IMDS (IMDSv1) is refused
// with 401, and one with a token read with PUT /latest/api/token
// answers the instance's id.
func checkIMDSv2Only(t *testing.T, ctx context.Context, c *imagetest.Container) {
	ctx, cancel := imagetest.CheckTimeout(ctx)
	defer cancel()
	const md = "http://169.254.169.254/latest/meta-data/instance-id"
	out, err := c.Exec(ctx, "curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", md)
	if err != nil || strings.TrimSpace(string(out)) != "401" {
		t.Errorf("GET %s without a token on the VM: %q (%v), want 401", md, out, err)
	}
	token, err := c.Exec(ctx, "curl", "-sf", "-X", "PUT", "-H", imds.TTLHeader+": 60", "http://169.254.169.254/latest/api/token")
	if err != nil {
		t.Fatalf("PUT /latest/api/token on the VM: %v", err)
	}
	id, err := c.Exec(ctx, "curl", "-sf", "-H", imds.TokenHeader+": "+strings.TrimSpace(string(token)), md)
	if err != nil || !strings.HasPrefix(strings.TrimSpace(string(id)), "i-") {
		t.Errorf("GET %s with a token on the VM: %q (%v), want the instance's id", md, id, err)
	}
}
