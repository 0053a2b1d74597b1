package imagetest

import (
	"context"
	"crypto/x509"
	"net/http"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/egress-proxies/egress/internal/bootstrap/cloudinit"
	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/vmstatus"
)

// What a cloud's own folder writes to have TestImage boot its VMs: a
// Shape, in a package of the cloud's (its plugin's ImageTest names it),
// which the image test finds in the list make docs writes
// (shapes_gen_test.go), so that the test names no cloud of its own. The
// boot, its network, its stand-ins of the internet and the checks every
// cloud-init VM gets are the image test's (cloudinit_test.go); a shape
// brings what is its cloud's: the image, the provider's create against
// the cloud's fake, the metadata service's stand-in and the cloud's own
// checks.

// Shape is one cloud-init cloud's boot: a Debian 13 shaped like the
// cloud's image, whose cloud-init reads the user-data the cloud's
// provider made from a stand-in of the cloud's metadata service, booted
// twice, with the checks of every cloud-init boot and the cloud's own.
type Shape struct {
	// Release names the boot (its Family, in the summary line and in
	// EGRESS_IMAGE_ONLY) and carries what makes the tree the cloud's
	// image (Release.Image: the datasource's setup).
	Release Release
	// Datasource starts the name of the datasource cloud-init must run
	// on, as /run/cloud-init/result.json gives it.
	Datasource string
	// UserDataPath is the metadata service's path of the user-data,
	// which a check asks through the proxy, to be refused.
	UserDataPath string
	// Static makes the proxy a Static one (its create request's
	// StaticIP), for a cloud whose Static VMs do something of their own.
	Static bool
	// IPv6, when set, is the ipv6Egress mode of the boot's
	// configuration (fixed at boot, as a cloud-init VM's is), on a
	// topology that routes the VM a prefix as a Hetzner server's is
	// routed (Topology.RouteIPv6OnTheVM), unless RouteIPv6 routes it
	// otherwise: the IPv6 checks run.
	IPv6      string
	RouteIPv6 func(*Topology) error
	// Create makes the VM with the cloud's provider against the cloud's
	// fake (Harness.Create) and returns what the boot needs of it.
	Create func(t *testing.T, ctx context.Context, h Harness) *VM
}

// VM is the VM a Shape's Create made, as the boot needs it.
type VM struct {
	// ID is the VM's id as cloud-init sees it (its instance-id).
	ID string
	// Firmware are the files each boot's copy of the tree gets, what
	// the cloud's firmware would say (the DMI stand-in's, in DMIDir).
	Firmware map[string]string
	// UserData is the user-data the VM was created with, as the cloud's
	// API holds it: the checks search it for secrets.
	UserData string
	// Metadata serves the cloud's metadata service on MetadataAddr and
	// records what it was asked.
	Metadata MetadataService
	// Ready, when set, is the cloud's provider's reading of the VM once
	// its status says Ready: "" once the provider reads it Running, or
	// why not yet. The boot waits for both.
	Ready func(ctx context.Context) (string, error)
	// IPv6Prefix, when valid, is the prefix the VM's IPv6 egress comes
	// from when it is not VMIPv6Prefix (one the cloud delegated, which
	// Create routed to the VM: Topology.RouteDelegated).
	IPv6Prefix netip.Prefix
	// Anchor, when valid, is the address the VM's traffic reaches the
	// test's hosts from once the provider reads it Running, instead of
	// the VM's own: the checks of the traffic's source expect it.
	Anchor netip.Prefix
	// Checks are the cloud's own checks after the first boot, and
	// RebootChecks after the second; c is the booted VM.
	Checks, RebootChecks func(check Check, ctx context.Context, c *Container)
	// Reboot, when set, takes away what a reboot of the cloud's VM
	// starts without and the test's namespaces keep (a route, an
	// address), between the two boots.
	Reboot func(t *testing.T)
}

// Check runs fn as a check of the boot named name: a subtest, counted
// in the summary line.
type Check func(name string, fn func(t *testing.T))

// MetadataService is a stand-in of a cloud's metadata service.
type MetadataService interface {
	http.Handler
	// Requests are every request so far, in order.
	Requests() []Request
}

// Recorder records the requests a stand-in receives, before it answers
// them: a stand-in embeds it, and its Requests, for MetadataService.
type Recorder struct {
	mu       sync.Mutex
	requests []Request
}

// Record records r, with the time it came and its X-Forwarded-For.
func (rec *Recorder) Record(r *http.Request) {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	rec.requests = append(rec.requests, Request{Time: time.Now(), RemoteAddr: r.RemoteAddr, Method: r.Method,
		URI: r.RequestURI, Forwarded: r.Header.Get("X-Forwarded-For")})
}

// RecordGet records r and answers any method but GET with 405, for a
// service that serves GET alone; it reports whether r is a GET, which
// the stand-in answers then.
func (rec *Recorder) RecordGet(w http.ResponseWriter, r *http.Request) bool {
	rec.Record(r)
	if r.Method != http.MethodGet {
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return false
	}
	return true
}

// Requests returns every request recorded so far, in order.
func (rec *Recorder) Requests() []Request {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return append([]Request(nil), rec.requests...)
}

// Harness is what a Shape's Create gets of the boot the image test set up
// around it.
type Harness interface {
	// Topology is the boot's network: the VM's namespace and the test's
	// internet, where the stand-ins, the hosts and ControlPlaneAddr are.
	Topology() *Topology
	// VMSide is the VM side the cloud's provider is given: package
	// cloudinit's renderer (the engine at the test's storage, the
	// self-test's target by name, the status access of a fresh control
	// plane's key, the prefix length of VMIPv6Prefix when Shape.IPv6 is
	// set), to which the shape adds what its plugin's Boot says,
	// and the control plane's prober, which asks from ControlPlaneAddr.
	VMSide(t *testing.T) (cloudinit.Renderer, *vmstatus.Prober)
	// Create calls p's Create with the request the reconciler makes for
	// the test's proxy at place, and returns the providerID.
	Create(p provider.Provider, place provider.Placement) string
	// Instance is the VM's name, as Create asked for it.
	Instance() string
	// Status asks the VM's proxy for its status, as the control plane
	// does.
	Status(ctx context.Context) (vmstatus.Status, error)
	// Client is the proxy's user, with the proxy's credentials, at a
	// source inside allowedSourceRanges.
	Client() ProxyClient
	// TLSHost is the host at TLSHostAddr, TLSPort, and Roots the pool
	// that trusts its certificate (for TLSHostName).
	TLSHost() *Host
	Roots() *x509.CertPool
}

// ControlPlaneAddr is the control plane's egress address in the test's
// internet (its Cloud NAT's, in production): outside allowedSourceRanges,
// admitted by the VM for the status request alone.
var ControlPlaneAddr = netip.MustParseAddr("203.0.113.7")

// CheckTimeout bounds one check's talk with the VM.
func CheckTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, 15*time.Second)
}

// CheckIdentity: the status the control plane reads names the VM as
// instance, in zone, as the agent read them from the cloud's metadata
// service.
func CheckIdentity(t *testing.T, ctx context.Context, h Harness, instance, zone string) {
	ctx, cancel := CheckTimeout(ctx)
	defer cancel()
	st, err := h.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Instance != instance || st.Zone != zone {
		t.Errorf("the status names instance %q in %q, want %s in %s", st.Instance, st.Zone, instance, zone)
	}
}
