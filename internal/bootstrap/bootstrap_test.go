package bootstrap_test

import (
	"encoding/json"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/egress-proxies/egress/internal/bootstrap"
	"github.com/egress-proxies/egress/internal/proxy"
	"github.com/egress-proxies/egress/internal/vm/vmconfig"
)

var creds = proxy.Credentials{Username: "u7Qk2pLm9xZa", Password: "Zq8Rk3Vw1Ls5Nt7Bx2Cy4Dm6"}

func config() bootstrap.Config {
	return bootstrap.Config{
		Port:                3128,
		AllowedSourceRanges: []string{"203.0.113.0/24", "2001:db8::/32"},
		Credentials:         creds,
		Generation:          1,
	}
}

// TestRenderRefusesBadValues: every value that would reach the script is
// checked, and a value carrying shell or configuration is refused, not
// quoted and passed on.
func TestRenderRefusesBadValues(t *testing.T) {
	cases := map[string]struct {
		reason string
		change func(*bootstrap.Config)
	}{
		"PortZero":          {"a port must be 1-65535", func(c *bootstrap.Config) { c.Port = 0 }},
		"PortTooHigh":       {"a port must be 1-65535", func(c *bootstrap.Config) { c.Port = 70000 }},
		"NoRanges":          {"a proxy open to nobody is a mistake", func(c *bootstrap.Config) { c.AllowedSourceRanges = nil }},
		"NotACIDR":          {"a range must parse", func(c *bootstrap.Config) { c.AllowedSourceRanges = []string{"everyone"} }},
		"RangeInjection":    {"a newline must not reach the configuration", func(c *bootstrap.Config) { c.AllowedSourceRanges = []string{"10.0.0.0/8\nAllow 0.0.0.0/0"} }},
		"RangeShell":        {"a quote must not reach the script", func(c *bootstrap.Config) { c.AllowedSourceRanges = []string{"10.0.0.0/8'; reboot; '"} }},
		"MappedPrefix":      {"an IPv4-mapped prefix would escape the IPv4 filter", func(c *bootstrap.Config) { c.AllowedSourceRanges = []string{"::ffff:10.0.0.0/104"} }},
		"DenyNotACIDR":      {"a deny range must parse", func(c *bootstrap.Config) { c.DenyRanges = []string{"10.0.0.0/8'; reboot"} }},
		"DenyMapped":        {"an IPv4-mapped deny range would never match", func(c *bootstrap.Config) { c.DenyRanges = []string{"::ffff:10.0.0.0/104"} }},
		"ConnectPortZero":   {"a CONNECT port must be 1-65535", func(c *bootstrap.Config) { c.ConnectPorts = []int32{0} }},
		"NoCredentials":     {"a proxy without credentials is open", func(c *bootstrap.Config) { c.Credentials = proxy.Credentials{} }},
		"PasswordShort":     {"a password must carry 128 bits", func(c *bootstrap.Config) { c.Credentials.Password = "short" }},
		"PasswordInjection": {"a space is outside the alphabet", func(c *bootstrap.Config) { c.Credentials.Password = "Zq8Rk3Vw1Ls5Nt7B x2Cy4Dm6" }},
		"UsernameShell":     {"a quote must not reach the script", func(c *bootstrap.Config) { c.Credentials.Username = "u'$(reboot)'" }},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := config()
			tc.change(&c)
			if s, err := bootstrap.Render(c); err == nil {
				t.Errorf("Render accepted it (%s):\n%s", tc.reason, s)
			}
			if e, err := bootstrap.EngineConfig(c); err == nil {
				t.Errorf("EngineConfig accepted it (%s): %+v", tc.reason, e)
			}
		})
	}
}

// TestRenderedValues checks the values reach the script single-quoted and
// canonical, and the engine's configuration holds what a client relies on:
// the username and a hash of the password, the sources (and the VM
// itself), the CONNECT ports and the deny ranges.
func TestRenderedValues(t *testing.T) {
	c := config()
	c.AllowedSourceRanges = []string{"203.0.113.7/24", "2001:db8::1/32"}
	c.ConnectPorts = []int32{8443, 443, 8443}
	script, err := bootstrap.Render(c)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"readonly PORT='3128'\n",
		"readonly STATS_PORT='9901'\n",
	} {
		if !strings.Contains(script, want) {
			t.Errorf("the script lacks %q", want)
		}
	}
	got, err := bootstrap.EngineConfig(c)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Users) != 1 || !vmconfig.Matches(got.Users[0].PasswordHash, creds.Password) {
		t.Errorf("users %+v: want the proxy's username with a hash of its password", got.Users)
	}
	want := vmconfig.Config{
		Generation:          1,
		Listen:              ":3128",
		Users:               []vmconfig.User{{Name: creds.Username, PasswordHash: got.Users[0].PasswordHash}},
		AllowedSourceRanges: []string{"127.0.0.1/32", "::1/128", "203.0.113.0/24", "2001:db8::/32"},
		ConnectPorts:        []int{443, 8443},
		DenyDestinations:    canonical(vmconfig.DefaultDenyDestinations),
		StatsListen:         "127.0.0.1:9901",
		AccessLog:           true,
	}
	if diff := cmp.Diff(want, got, cmpopts.SortSlices(func(a, b string) bool { return a < b })); diff != "" {
		t.Errorf("the engine's configuration (-want +got):\n%s", diff)
	}
}

// TestNoSecretInTheBootstrap: a reader of the instance's metadata learns
// nothing that lets them use the proxy: the password is in neither the
// script nor the engine's configuration, and two renders salt the hash
// apart.
func TestNoSecretInTheBootstrap(t *testing.T) {
	script, err := bootstrap.Render(config())
	if err != nil {
		t.Fatal(err)
	}
	a, err := bootstrap.EngineConfig(config())
	if err != nil {
		t.Fatal(err)
	}
	b, err := bootstrap.EngineConfig(config())
	if err != nil {
		t.Fatal(err)
	}
	js, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	for name, v := range map[string]string{"script": script, "configuration": string(js)} {
		if strings.Contains(v, creds.Password) {
			t.Errorf("the %s holds the password", name)
		}
	}
	if a.Users[0].PasswordHash == b.Users[0].PasswordHash {
		t.Error("two renders gave the same hash: it is not salted afresh")
	}
}

// TestDenyRanges: the kernel's filter and the engine refuse every
// special-purpose range besides the private ones, and the operator's own; a
// range inside another is dropped, since an nftables interval set refuses
// overlapping elements.
func TestDenyRanges(t *testing.T) {
	for _, r := range []string{"192.0.0.0/24", "192.0.2.0/24", "192.88.99.0/24", "198.18.0.0/15", "198.51.100.0/24",
		"203.0.113.0/24", "::/96", "::ffff:0:0/96", "64:ff9b::/96", "64:ff9b:1::/48", "2002::/16", "2001:db8::/32"} {
		if !slices.Contains(vmconfig.DefaultDenyDestinations, r) {
			t.Errorf("DefaultDenyDestinations lacks %s", r)
		}
	}
	c := config()
	c.DenyRanges = []string{"10.128.0.0/9", "34.64.0.0/10", "34.64.1.0/24", "34.64.0.0/10", "fd12::/16"}
	_, err := bootstrap.Render(c)
	if err != nil {
		t.Fatal(err)
	}
	got, err := bootstrap.EngineConfig(c)
	if err != nil {
		t.Fatal(err)
	}
	want := append(canonical(vmconfig.DefaultDenyDestinations), "34.64.0.0/10")
	if diff := cmp.Diff(want, got.DenyDestinations, cmpopts.SortSlices(func(a, b string) bool { return a < b })); diff != "" {
		t.Errorf("deny ranges (-want +got):\n%s", diff)
	}
}

// TestScriptIsValidShell parses the rendered script with bash and, where it
// is installed, checks it with shellcheck (scripts/install-deps.sh installs
// it; under CI it must be there).
func TestScriptIsValidShell(t *testing.T) {
	s, err := bootstrap.Render(config())
	if err != nil {
		t.Fatal(err)
	}
	checkShell(t, s)
}

// TestCloudInitScriptIsValidShell: the same of a cloud-init boot's
// script, whose units (the VM-side part's, the user data's watch) are its own.
func TestCloudInitScriptIsValidShell(t *testing.T) {
	engine, err := bootstrap.EngineConfig(config())
	if err != nil {
		t.Fatal(err)
	}
	s, err := bootstrap.CloudInitScript(engine)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(s, "egress-watch.service") {
		t.Fatal("the cloud-init boot's script starts no watch of the user data")
	}
	checkShell(t, s)
}

func checkShell(t *testing.T, s string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "startup-script")
	if err := os.WriteFile(path, []byte(s), 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("bash", "-n", path).CombinedOutput(); err != nil {
		t.Fatalf("bash -n: %v\n%s", err, out)
	}
	sc, err := exec.LookPath("shellcheck")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("shellcheck is not installed; scripts/install-deps.sh installs it")
		}
		t.Skip("shellcheck is not installed: apt-get install shellcheck (scripts/install-deps.sh does)")
	}
	if out, err := exec.Command(sc, "--shell=bash", "--severity=warning", path).CombinedOutput(); err != nil {
		t.Errorf("shellcheck: %v\n%s", err, out)
	}
}

// TestScriptNeverPrintsASecret: the guest agent copies the script's output
// to the serial console, which anyone with compute.instances.getSerialPortOutput
// reads; no line of the script that prints may name the self-test's
// password or a token.
func TestScriptNeverPrintsASecret(t *testing.T) {
	s, err := bootstrap.Render(config())
	if err != nil {
		t.Fatal(err)
	}
	for i, l := range strings.Split(s, "\n") {
		trimmed := strings.TrimSpace(l)
		if strings.HasPrefix(trimmed, "log ") || strings.HasPrefix(trimmed, "echo ") || strings.HasPrefix(trimmed, "fail ") {
			if strings.Contains(l, "password") || strings.Contains(l, "bearer") || strings.Contains(l, "token") {
				t.Errorf("line %d prints a secret: %s", i+1, l)
			}
		}
	}
}

// TestDefaultConnectPorts: a spec that names no CONNECT ports gets 443 and
// 80, and nothing else, in the engine and in the kernel's filter.
func TestDefaultConnectPorts(t *testing.T) {
	_, err := bootstrap.Render(config())
	if err != nil {
		t.Fatal(err)
	}
	got, err := bootstrap.EngineConfig(config())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]int{80, 443}, got.ConnectPorts); diff != "" {
		t.Errorf("the engine's CONNECT ports (-want +got):\n%s", diff)
	}
}

// canonical is each CIDR as netip prints it, the form the script and the
// configuration carry.
func canonical(cidrs []string) []string {
	out := make([]string, len(cidrs))
	for i, c := range cidrs {
		out[i] = netip.MustParsePrefix(c).String()
	}
	return out
}
