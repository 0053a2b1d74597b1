package cloudinit_test

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.yaml.in/yaml/v3"

	"github.com/egress-proxies/egress/internal/cloudinit"
)

// TestRenderIsCloudConfig parses the rendered user-data as cloud-init does
// and checks it installs tinyproxy with exactly the configuration Tinyproxy
// renders.
func TestRenderIsCloudConfig(t *testing.T) {
	ud, err := cloudinit.Render(8888, []string{"203.0.113.0/24", "2001:db8::/32"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(ud, "#cloud-config\n") {
		t.Fatalf("user-data does not start with #cloud-config:\n%s", ud)
	}
	var doc struct {
		Packages   []string `yaml:"packages"`
		WriteFiles []struct {
			Path, Content string
		} `yaml:"write_files"`
		Runcmd [][]string `yaml:"runcmd"`
	}
	if err := yaml.Unmarshal([]byte(ud), &doc); err != nil {
		t.Fatalf("user-data is not YAML: %v\n%s", err, ud)
	}
	if diff := cmp.Diff([]string{"tinyproxy"}, doc.Packages); diff != "" {
		t.Errorf("packages (-want +got):\n%s", diff)
	}
	want, _ := cloudinit.Tinyproxy(8888, []string{"203.0.113.0/24", "2001:db8::/32"})
	files := map[string]string{}
	for _, f := range doc.WriteFiles {
		files[f.Path] = f.Content
	}
	if diff := cmp.Diff(want, files[cloudinit.ConfigPath]); diff != "" {
		t.Errorf("tinyproxy configuration in the user-data (-Tinyproxy +user-data):\n%s", diff)
	}
	if !strings.Contains(files["/etc/systemd/system/tinyproxy.service.d/egress-proxy.conf"], "Restart=always") {
		t.Error("the systemd drop-in does not restart tinyproxy")
	}
	if !strings.Contains(want, "Port 8888\n") || !strings.Contains(want, "Allow 203.0.113.0/24\n") || !strings.Contains(want, "Allow 2001:db8::/32\n") {
		t.Errorf("configuration lacks the port or the ranges:\n%s", want)
	}
}

func TestRefusesBadValues(t *testing.T) {
	for name, tc := range map[string]struct {
		port    int32
		allowed []string
	}{
		"PortZero":    {0, []string{"10.0.0.0/8"}},
		"PortTooHigh": {70000, []string{"10.0.0.0/8"}},
		"NoRanges":    {3128, nil},
		"Injection":   {3128, []string{"10.0.0.0/8\nAllow 0.0.0.0/0"}},
		"NotACIDR":    {3128, []string{"everyone"}},
	} {
		t.Run(name, func(t *testing.T) {
			if ud, err := cloudinit.Render(tc.port, tc.allowed); err == nil {
				t.Errorf("Render(%d, %q) = nil error, want a refusal:\n%s", tc.port, tc.allowed, ud)
			}
		})
	}
}

// TestRenderedProxyProxies runs Debian's tinyproxy with the rendered
// configuration on loopback and sends real traffic through it.
func TestRenderedProxyProxies(t *testing.T) {
	bin, err := exec.LookPath("tinyproxy")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("tinyproxy is not installed; scripts/install-deps.sh installs it")
		}
		t.Skip("tinyproxy is not installed: apt-get install tinyproxy (scripts/install-deps.sh does)")
	}
	tlsSrv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "tls ok") }))
	defer tlsSrv.Close()
	plainSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "plain ok") }))
	defer plainSrv.Close()

	allowed := startProxy(t, bin, []string{"127.0.0.1/32"})
	client := proxyClient(allowed)

	resp, err := client.Get(tlsSrv.URL)
	if err != nil {
		t.Fatalf("HTTPS through CONNECT: %v", err)
	}
	if b, _ := io.ReadAll(resp.Body); string(b) != "tls ok" {
		t.Errorf("HTTPS through CONNECT: %d %q", resp.StatusCode, b)
	}
	resp.Body.Close()

	resp, err = client.Get(plainSrv.URL)
	if err != nil {
		t.Fatalf("plain HTTP through the proxy: %v", err)
	}
	if b, _ := io.ReadAll(resp.Body); string(b) != "plain ok" {
		t.Errorf("plain HTTP through the proxy: %d %q", resp.StatusCode, b)
	}
	resp.Body.Close()

	// A proxy that allows only 127.0.0.2 refuses us at 127.0.0.1.
	denied := startProxy(t, bin, []string{"127.0.0.2/32"})
	resp, err = proxyClient(denied).Get(plainSrv.URL)
	if err == nil {
		defer resp.Body.Close()
	}
	if err == nil && resp.StatusCode != http.StatusForbidden {
		t.Errorf("a source outside the allowed ranges got %d, want 403", resp.StatusCode)
	}
	if _, err := proxyClient(denied).Get(tlsSrv.URL); err == nil {
		t.Error("a source outside the allowed ranges could CONNECT")
	}
}

func proxyClient(proxyAddr string) *http.Client {
	u, _ := url.Parse("http://" + proxyAddr)
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		Proxy:           http.ProxyURL(u),
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, // the test server's own certificate
	}}
}

// startProxy runs tinyproxy in the foreground with the rendered
// configuration on a free loopback port and returns its address.
func startProxy(t *testing.T, bin string, allowed []string) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	conf, err := cloudinit.Tinyproxy(int32(port), allowed)
	if err != nil {
		t.Fatal(err)
	}
	// On loopback only, and as the current user when not root.
	conf = "Listen 127.0.0.1\n" + conf
	if os.Geteuid() != 0 {
		conf = strings.NewReplacer("User tinyproxy\n", "", "Group tinyproxy\n", "").Replace(conf)
	}
	dir := t.TempDir()
	os.Chmod(dir, 0o755)
	path := filepath.Join(dir, "tinyproxy.conf")
	if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-d", "-c", path)
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			out.WriteString(sc.Text() + "\n")
		}
	}()
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	deadline := time.Now().Add(10 * time.Second)
	for {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return addr
		}
		if time.Now().After(deadline) {
			t.Fatalf("tinyproxy did not listen on %s:\n%s", addr, out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}
