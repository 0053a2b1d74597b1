package main

import (
	"io"
	"regexp"
	"slices"
	"strconv"
	"testing"

	"github.com/egress-proxies/egress/internal/app"
	"github.com/egress-proxies/egress/internal/clouds"
	"github.com/egress-proxies/egress/internal/provider/mock"
	"github.com/egress-proxies/egress/internal/proxy"
)

// localClouds are the clouds the local stack knows: the production list
// and the mock.
var localClouds = append(slices.Clone(clouds.All), mock.Plugin)

// TestLocalStackTakesTheCLIsExamplePorts: every port the CLI's own
// examples of `proxies create` name (--port, --socks5-port) is one the
// local stack's firewall policy (PROXY_PORTS with make run's defaults)
// opens, so a newcomer who copies an example onto `make run` is not
// refused PORT_NOT_OPEN.
func TestLocalStackTakesTheCLIsExamplePorts(t *testing.T) {
	root := (&cli{stdout: io.Discard, stderr: io.Discard, getenv: func(string) string { return "" }}).command()
	create, _, err := root.Find([]string{"proxies", "create"})
	if err != nil {
		t.Fatal(err)
	}
	ports := regexp.MustCompile(`--(?:socks5-)?port (\d+)`).FindAllStringSubmatch(create.Example, -1)
	if len(ports) == 0 {
		t.Fatal("the examples of `egress proxies create` name no --port or --socks5-port: nothing to check")
	}
	cfg, err := app.Load(app.LocalGetenv(func(string) string { return "" }, localClouds), localClouds, app.ProxyAPI)
	if err != nil {
		t.Fatal(err)
	}
	pol := cfg.API.Policy
	for _, m := range ports {
		p, _ := strconv.Atoi(m[1])
		if !pol.PortOpen(int32(p)) {
			t.Errorf("the CLI's example %q names port %d, which the local stack refuses (PROXY_PORTS %v); give PROXY_PORTS a LocalDefault that opens it", m[0], p, pol.ProxyPorts)
		}
	}
	if got := pol.DefaultPort(); got != proxy.DefaultPort {
		t.Errorf("the local stack's default proxy port is %d, want %d: a spec without a port must keep 3128", got, proxy.DefaultPort)
	}
}
