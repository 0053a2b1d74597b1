package main

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/url"
	"testing"

	"golang.org/x/net/proxy"
)

// socks5Proxy is the CLI's own SOCKS5 example on the local stack as make
// run configures it (PROXY_PORTS 3128 and 1080): a proxy with
// --socks5-port 1080 turns Ready, and a request through its socks5URL
// reaches the API's health check.
func (s *liveStack) socks5Proxy(t *testing.T) {
	cli := buildCLI(t, s.front.URL, unsignedToken("alice@example.com"))
	api, err := url.Parse(s.URL)
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(api.Host)
	ns := []string{"--namespace", "demo"}
	stdout, _ := cli.must(t, append([]string{"proxies", "create", "socks", "--region", "us-central1", "--allowed-source-range", "127.0.0.1/32",
		"--socks5-port", "1080", "--connect-port", port, "--wait", "--timeout", "90s", "-o", "json"}, ns...)...)
	var p struct {
		Status struct{ Phase, Socks5URL string }
	}
	if err := json.Unmarshal([]byte(stdout), &p); err != nil || p.Status.Phase != "Ready" || p.Status.Socks5URL == "" {
		t.Fatalf("create --socks5-port 1080 --wait: phase %q, socks5URL %q (%v), want Ready with a socks5URL:\n%s", p.Status.Phase, p.Status.Socks5URL, err, stdout)
	}
	t.Cleanup(func() {
		cli.must(t, append([]string{"proxies", "delete", "socks", "--wait", "--timeout", "90s"}, ns...)...)
	})
	u, err := url.Parse(p.Status.Socks5URL)
	if err != nil {
		t.Fatal(err)
	}
	dialer, err := proxy.FromURL(u, proxy.Direct)
	if err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Transport: &http.Transport{Dial: dialer.Dial}}
	resp, err := client.Get("http://" + api.Host + "/healthz")
	if err != nil {
		t.Fatalf("GET /healthz through %s: %v", u.Redacted(), err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Errorf("GET /healthz through the SOCKS5 port: %d %q, want 200", resp.StatusCode, body)
	}
}
