package cloudinit_test

import (
	"context"
	"encoding/base64"
	"maps"
	"path"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/egress-proxies/egress/internal/bootstrap"
	"github.com/egress-proxies/egress/internal/bootstrap/cloudinit"
	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/proxy"
	"github.com/egress-proxies/egress/internal/vm/vmconfig"
	"github.com/egress-proxies/egress/internal/vmstatus"
)

const (
	uid      = "3f2c1b0a-9e8d-4c7b-a6f5-e4d3c2b1a098"
	password = "Tenantpassword0123456789"
	sha      = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
)

func renderer(t *testing.T) (cloudinit.Renderer, vmstatus.Key) {
	k, err := vmstatus.NewKey([]byte(strings.Repeat("k", 32)))
	if err != nil {
		t.Fatal(err)
	}
	return cloudinit.Renderer{EngineURL: "https://storage.googleapis.com/egress-engine/egress-proxy-" + sha, EngineSHA256: sha, ProbeTarget: "example.com:443",
		Status: func(_ context.Context, uid, id string) (*vmconfig.StatusAccess, error) {
			return k.Access(uid, id, []string{"198.51.100.7/32"})
		}}, k
}

func request(t *testing.T) provider.CreateRequest {
	t.Helper()
	cfg := bootstrap.Config{Port: 3128, AllowedSourceRanges: []string{"203.0.113.0/24"}, Generation: 1,
		Credentials: proxy.Credentials{Username: "tenant", Password: password}}
	engine, err := bootstrap.EngineConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	script, err := bootstrap.Render(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return provider.CreateRequest{Name: "proxy-3f2c1b0a", UID: uid, Port: 3128, StartupScript: script, Engine: &engine}
}

// TestUserData: the user-data writes the engine's configuration with the
// status access of the VM's uid, the engine's URL and SHA-256, the probe
// target and the per-boot script, and reads back as written; no password
// is in it, the proxy's or the status's.
func TestUserData(t *testing.T) {
	r, k := renderer(t)
	req := request(t)
	ud, err := r.UserData(req)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(ud, "#cloud-config\n") || len(ud) > 32<<10 {
		t.Fatalf("the user-data is not a #cloud-config within 32 KiB (%d bytes):\n%.200s", len(ud), ud)
	}
	for _, secret := range []string{password, k.Password(uid, vmstatus.StatusID(req))} {
		if strings.Contains(ud, secret) {
			t.Errorf("the user-data holds a password a reader could use")
		}
	}
	boot, err := cloudinit.Parse(ud)
	if err != nil {
		t.Fatal(err)
	}
	paths := slices.Sorted(maps.Keys(boot.Files))
	want := []string{"/etc/egress-proxy/boot/egress-config", "/etc/egress-proxy/boot/egress-engine-sha256", "/etc/egress-proxy/boot/egress-engine-url",
		"/etc/egress-proxy/boot/egress-probe-target", "/var/lib/cloud/scripts/per-boot/egress-bootstrap"}
	if diff := cmp.Diff(want, paths); diff != "" {
		t.Errorf("the files the user-data writes (-want +got):\n%s", diff)
	}
	got, err := boot.Engine()
	if err != nil {
		t.Fatal(err)
	}
	id := vmstatus.StatusID(req)
	if got.Status == nil || got.Status.User.Name != vmstatus.User || !vmconfig.Matches(got.Status.User.PasswordHash, k.Password(uid, id)) ||
		got.Status.SignKey != base64.RawURLEncoding.EncodeToString(k.SignKey(uid, id)) {
		t.Errorf("the engine's status access %+v does not hold the status credential and sign key of the uid and the request's status id", got.Status)
	}
	got.Status = nil
	if diff := cmp.Diff(*req.Engine, got); diff != "" {
		t.Errorf("the engine's configuration, the status access apart (-want +got):\n%s", diff)
	}
	if boot.Setting(vmconfig.KeyEngineSHA256) != sha || boot.Setting(vmconfig.KeyProbeTarget) != "example.com:443" {
		t.Errorf("the settings: sha %q, probe %q", boot.Setting(vmconfig.KeyEngineSHA256), boot.Setting(vmconfig.KeyProbeTarget))
	}
	script := boot.Files[vmconfig.BootScript]
	for _, want := range []string{"readonly BOOT='/etc/egress-proxy/boot'", `agent -boot "$BOOT"`, "-readiness $READINESS"} {
		if !strings.Contains(script, want) {
			t.Errorf("the per-boot script lacks %q", want)
		}
	}
	for _, gce := range []string{"guest-attributes", "service-accounts/default/token", ":publish"} {
		if strings.Contains(script, gce) {
			t.Errorf("the per-boot script uses GCE's %s", gce)
		}
	}
}

// TestRendererRefuses: settings the bootstrap would refuse at boot are
// refused at render.
func TestRendererRefuses(t *testing.T) {
	cases := map[string]struct {
		reason string
		change func(*cloudinit.Renderer)
	}{
		"no URL":      {"a VM could not install the engine", func(r *cloudinit.Renderer) { r.EngineURL = "" }},
		"a shell URL": {"the URL reaches a shell", func(r *cloudinit.Renderer) { r.EngineURL = "https://x/$(reboot)" }},
		"no SHA-256":  {"a VM would install any binary", func(r *cloudinit.Renderer) { r.EngineSHA256 = "" }},
		"bad probe":   {"the self-test could not reach it", func(r *cloudinit.Renderer) { r.ProbeTarget = "example.com" }},
		"no status":   {"nobody could tell the VM serves", func(r *cloudinit.Renderer) { r.Status = nil }},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r, _ := renderer(t)
			tc.change(&r)
			if ud, err := r.UserData(request(t)); err == nil {
				t.Errorf("%s: rendered\n%.200s", tc.reason, ud)
			}
		})
	}
	r, _ := renderer(t)
	req := request(t)
	req.Engine = nil
	if _, err := r.UserData(req); err == nil {
		t.Error("a request without an engine configuration was rendered")
	}
}

// TestEC2UserData: the renderer as EC2's (Gzip, IMDS) makes a user-data
// that starts with gzip's magic number, as cloud-init detects it, well
// within EC2's 16 KiB, and that Parse reads back to the very files of
// the plain one, the IMDS setting among them.
func TestEC2UserData(t *testing.T) {
	r, _ := renderer(t)
	r.IMDS = vmconfig.EC2MetadataURL
	plain, err := r.UserData(request(t))
	if err != nil {
		t.Fatal(err)
	}
	r.Gzip = true
	compressed, err := r.UserData(request(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("the user-data of a proxy with one source range: %d bytes, %d compressed", len(plain), len(compressed))
	if !strings.HasPrefix(compressed, "\x1f\x8b") || len(compressed) >= len(plain) || len(compressed) > 16<<10 {
		t.Errorf("the compressed user-data is %d bytes (the plain one %d), starting %q: want gzip, smaller, within 16 KiB", len(compressed), len(plain), compressed[:2])
	}
	want, err := cloudinit.Parse(plain)
	if err != nil {
		t.Fatal(err)
	}
	got, err := cloudinit.Parse(compressed)
	if err != nil {
		t.Fatal(err)
	}
	// Each render salts its hashes anew: the engine's configuration is
	// compared as read, without them.
	config := path.Join(vmconfig.BootDir, vmconfig.KeyConfig)
	if diff := cmp.Diff(want, got, cmpopts.IgnoreMapEntries(func(k, _ string) bool { return k == config })); diff != "" {
		t.Errorf("the compressed user-data read back (-plain +compressed):\n%s", diff)
	}
	wantEngine, _ := want.Engine()
	gotEngine, err := got.Engine()
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(wantEngine.AllowedSourceRanges, gotEngine.AllowedSourceRanges); diff != "" || gotEngine.Status == nil || len(gotEngine.Users) != 1 {
		t.Errorf("the compressed user-data's engine configuration %+v: want the plain one's ranges (%s), one user and the status access", gotEngine, diff)
	}
	if got.Setting(vmconfig.KeyIMDS) != vmconfig.EC2MetadataURL {
		t.Errorf("the setting %s is %q, want %s", vmconfig.KeyIMDS, got.Setting(vmconfig.KeyIMDS), vmconfig.EC2MetadataURL)
	}
}

// TestFollowSetting: the renderer of a cloud with a VM-side part for
// static addresses (DigitalOcean's reserved IP, which leaves only through
// a route the Droplet sets) writes the setting egress-follow for a Static
// proxy's VM only, which is what makes the VM run that part, wait for its
// address and route through it; an Ephemeral proxy's VM, and any VM of a
// renderer without one (Hetzner's, EC2's), gets none and leaves its route
// alone.
func TestFollowSetting(t *testing.T) {
	follow := vmconfig.Follow("some-cloud", "http://169.254.169.254/metadata/v1.json")
	cases := map[string]struct {
		reason string
		follow string
		static bool
		want   string
	}{
		"a part, Static":        {"the VM runs the part that follows its static address", follow, true, follow},
		"a part, Ephemeral":     {"no static address will come: nothing to wait for", follow, false, ""},
		"another cloud, Static": {"a static address that is the VM's own needs no route", "", true, ""},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r, _ := renderer(t)
			r.Follow = tc.follow
			req := request(t)
			req.StaticIP = tc.static
			ud, err := r.UserData(req)
			if err != nil {
				t.Fatal(err)
			}
			boot, err := cloudinit.Parse(ud)
			if err != nil {
				t.Fatal(err)
			}
			_, written := boot.Files[path.Join(vmconfig.BootDir, vmconfig.KeyFollow)]
			if diff := cmp.Diff([2]any{tc.want, tc.want != ""}, [2]any{boot.Setting(vmconfig.KeyFollow), written}); diff != "" {
				t.Errorf("%s\nthe setting %s and whether it is written (-want +got):\n%s", tc.reason, vmconfig.KeyFollow, diff)
			}
		})
	}
}

// TestWatchUserDataSetting: the renderer of a cloud whose VM's user data
// changes in place (Azure's) tells every VM where to watch it, Static or
// not; a renderer without it writes no setting, so the VM's agent never
// polls a metadata service that would not answer.
func TestWatchUserDataSetting(t *testing.T) {
	for name, tc := range map[string]struct{ watch, want string }{
		"Azure":       {vmconfig.AzureUserDataURL, vmconfig.AzureUserDataURL},
		"other cloud": {"", ""},
	} {
		t.Run(name, func(t *testing.T) {
			r, _ := renderer(t)
			r.WatchUserData = tc.watch
			ud, err := r.UserData(request(t))
			if err != nil {
				t.Fatal(err)
			}
			boot, err := cloudinit.Parse(ud)
			if err != nil {
				t.Fatal(err)
			}
			_, written := boot.Files[path.Join(vmconfig.BootDir, vmconfig.KeyWatchUserData)]
			if diff := cmp.Diff([2]any{tc.want, tc.want != ""}, [2]any{boot.Setting(vmconfig.KeyWatchUserData), written}); diff != "" {
				t.Errorf("the setting %s and whether it is written (-want +got):\n%s", vmconfig.KeyWatchUserData, diff)
			}
		})
	}
}

// TestIPv6PrefixLength: a create that rotates IPv6 sources cannot name
// the prefix the cloud has yet to assign, so the user-data says its
// length, for the VM to find it; a configuration that names the prefix,
// or does not rotate, carries none.
func TestIPv6PrefixLength(t *testing.T) {
	for _, tc := range []struct {
		name, mode, prefix string
		want               int
	}{
		{"PerConnectionAtCreate", vmconfig.IPv6EgressPerConnection, "", 64},
		{"PerSessionAtCreate", vmconfig.IPv6EgressPerSession, "", 64},
		{"PrefixKnown", vmconfig.IPv6EgressPerConnection, "2001:db8:7:1::/64", 0},
		{"Single", vmconfig.IPv6EgressSingle, "", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, _ := renderer(t)
			r.IPv6PrefixLength = 64
			req := request(t)
			e := *req.Engine
			e.IPv6Egress, e.IPv6Prefix = tc.mode, tc.prefix
			req.Engine = &e
			ud, err := r.UserData(req)
			if err != nil {
				t.Fatal(err)
			}
			boot, err := cloudinit.Parse(ud)
			if err != nil {
				t.Fatal(err)
			}
			got, err := boot.Engine()
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got.IPv6PrefixLength); diff != "" {
				t.Errorf("ipv6PrefixLength (-want +got):\n%s", diff)
			}
		})
	}
}
