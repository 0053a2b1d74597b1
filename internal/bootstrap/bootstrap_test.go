package bootstrap_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/internal/bootstrap"
	"github.com/egress-proxies/egress/internal/proxy"
)

var creds = proxy.Credentials{Username: "u7Qk2pLm9xZa", Password: "Zq8Rk3Vw1Ls5Nt7Bx2Cy4Dm6"}

func config() bootstrap.Config {
	return bootstrap.Config{
		Port:                3128,
		AllowedSourceRanges: []string{"203.0.113.0/24", "2001:db8::/32"},
		Credentials:         creds,
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
		"ConnectPortZero":   {"a CONNECT port must be 1-65535", func(c *bootstrap.Config) { c.ConnectPorts = []int32{0} }},
		"NoCredentials":     {"a proxy without credentials is open", func(c *bootstrap.Config) { c.Credentials = proxy.Credentials{} }},
		"PasswordShort":     {"a password must carry 128 bits", func(c *bootstrap.Config) { c.Credentials.Password = "short" }},
		"PasswordInjection": {"a space would add a tinyproxy argument", func(c *bootstrap.Config) { c.Credentials.Password = "Zq8Rk3Vw1Ls5Nt7B x2Cy4Dm6" }},
		"UsernameShell":     {"a quote must not reach the script", func(c *bootstrap.Config) { c.Credentials.Username = "u'$(reboot)'" }},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := config()
			tc.change(&c)
			if s, err := bootstrap.Render(c); err == nil {
				t.Errorf("Render accepted it (%s):\n%s", tc.reason, s)
			}
		})
	}
}

// TestRenderedValues checks the values reach the script single-quoted and
// canonical, and the tinyproxy configuration holds what a client relies on.
func TestRenderedValues(t *testing.T) {
	c := config()
	c.AllowedSourceRanges = []string{"203.0.113.7/24", "2001:db8::1/32"}
	c.ConnectPorts = []int32{8443, 443, 8443}
	s, err := bootstrap.Render(c)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"readonly PORT='3128'\n",
		"readonly ALLOW4=('203.0.113.0/24' )\n",
		"readonly ALLOW6=('2001:db8::/32' )\n",
		"readonly CONNECT_PORTS=('443' '8443' )\n",
		"readonly PROXY_USERNAME='" + creds.Username + "'\n",
		"readonly PROXY_PASSWORD='" + creds.Password + "'\n",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("the script lacks %q", want)
		}
	}
	conf, err := bootstrap.Tinyproxy(c)
	if err != nil {
		t.Fatal(err)
	}
	var directives []string
	for _, l := range strings.Split(conf, "\n") {
		if l != "" && !strings.HasPrefix(l, "#") {
			directives = append(directives, l)
		}
	}
	want := []string{
		"Port 3128", "Timeout 600", "MaxClients 200", "LogLevel Warning", "DisableViaHeader Yes",
		"BasicAuth " + creds.Username + " " + creds.Password,
		"Allow 127.0.0.1", "Allow ::1", "Allow 203.0.113.0/24", "Allow 2001:db8::/32",
		"ConnectPort 443", "ConnectPort 8443",
	}
	if diff := cmp.Diff(want, directives); diff != "" {
		t.Errorf("tinyproxy configuration (-want +got):\n%s", diff)
	}
	if !strings.Contains(s, conf) {
		t.Error("the script does not write the configuration Tinyproxy renders")
	}
}

// TestDefaultConnectPorts: a spec that names no CONNECT ports gets 443 and
// 80, and nothing else.
func TestDefaultConnectPorts(t *testing.T) {
	conf, err := bootstrap.Tinyproxy(config())
	if err != nil {
		t.Fatal(err)
	}
	var ports []string
	for _, l := range strings.Split(conf, "\n") {
		if p, ok := strings.CutPrefix(l, "ConnectPort "); ok {
			ports = append(ports, p)
		}
	}
	if diff := cmp.Diff([]string{"80", "443"}, ports); diff != "" {
		t.Errorf("ConnectPort lines (-want +got):\n%s", diff)
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
// reads; no line of the script that prints may name the password.
func TestScriptNeverPrintsASecret(t *testing.T) {
	s, err := bootstrap.Render(config())
	if err != nil {
		t.Fatal(err)
	}
	for i, l := range strings.Split(s, "\n") {
		trimmed := strings.TrimSpace(l)
		if strings.HasPrefix(trimmed, "log ") || strings.HasPrefix(trimmed, "echo ") || strings.HasPrefix(trimmed, "fail ") {
			if strings.Contains(l, "PASSWORD") || strings.Contains(l, "token") || strings.Contains(l, creds.Password) {
				t.Errorf("line %d prints a secret: %s", i+1, l)
			}
		}
	}
}
