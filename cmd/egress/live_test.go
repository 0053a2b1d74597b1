package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/internal/clock"
	"github.com/egress-proxies/egress/internal/httpapi"
	"github.com/egress-proxies/egress/internal/provider"
	awsprovider "github.com/egress-proxies/egress/internal/provider/aws"
	"github.com/egress-proxies/egress/internal/provider/hetzner"
	"github.com/egress-proxies/egress/internal/provider/mock"
	"github.com/egress-proxies/egress/internal/proxy"
	"github.com/egress-proxies/egress/internal/store/rules"
	"github.com/egress-proxies/egress/internal/store/storefake"
	"github.com/egress-proxies/egress/internal/tenancy"
)

// localAPI is the API over the in-memory store, as the local stack
// serves it: a request with no token is ops@example.com, an admin and
// the owner of namespace demo, which holds proxy p, Ready.
func localAPI(t *testing.T) (string, *storefake.Store) {
	t.Helper()
	const who = "ops@example.com"
	st := storefake.New(clock.Real{})
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Microsecond)
	if _, err := st.CreateNamespace(ctx, rules.NewNamespace("demo", map[string]tenancy.Role{who: tenancy.Owner}, 0, 20, now)); err != nil {
		t.Fatal(err)
	}
	creds, _ := proxy.NewCredentials()
	p := &proxy.Proxy{Namespace: "demo", Name: "p", UID: "uid-p", Generation: 1, CreateTime: now,
		Spec:       proxy.Spec{Provider: mock.Type, Port: 3128, IPPolicy: proxy.IPEphemeral, Placement: proxy.Placement{Region: "us-central1"}, AllowedSourceRanges: []string{"203.0.113.0/24"}},
		Status:     proxy.Status{Phase: proxy.PhaseReady, Endpoint: "192.0.2.1:3128", ObservedGeneration: 1},
		Reconciler: proxy.Bookkeeping{Credentials: creds}}
	if _, err := st.Create(ctx, p, 20); err != nil {
		t.Fatal(err)
	}
	reg := provider.NewRegistry()
	_ = reg.Register(mock.Type, func(context.Context) (provider.Provider, error) { return nil, fmt.Errorf("unused") }, provider.WithValidator(mock.Validate), provider.InPlace())
	_ = reg.Register(hetzner.Type, func(context.Context) (provider.Provider, error) { return nil, fmt.Errorf("unused") },
		provider.WithValidator(hetzner.Validator(hetzner.Policy{ServerTypes: hetzner.DefaultAllowedServerTypes, Images: hetzner.DefaultAllowedImages})))
	_ = reg.Register(awsprovider.Type, func(context.Context) (provider.Provider, error) { return nil, fmt.Errorf("unused") },
		provider.WithValidator(awsprovider.Validator(awsprovider.Policy{Regions: []string{"us-east-1"}, InstanceTypes: awsprovider.DefaultAllowedInstanceTypes, Images: awsprovider.DefaultAllowedImages})))
	admins, _ := tenancy.ParseAdmins(who)
	api := httpapi.New(st, clock.Real{}, slog.New(slog.NewTextHandler(io.Discard, nil)), httpapi.Options{
		DefaultProvider: mock.Type, Providers: provider.NewSet(reg), Admins: admins, LocalIdentity: who,
	})
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	return srv.URL, st
}

// egress runs the CLI against api and returns its exit code and output.
func egress(api string, args ...string) (int, string, string) {
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), args, &stdout, &stderr, func(k string) string {
		return map[string]string{"EGRESS_API": api, "EGRESS_NAMESPACE": "demo"}[k]
	})
	return code, stdout.String(), stderr.String()
}

// TestCreateOnHetzner: --provider hetzner takes a network zone and a
// location of it, as the help lists them; a location of another zone, or
// a warm pool on Hetzner, is the API's 400, each violation on its line.
func TestCreateOnHetzner(t *testing.T) {
	api, st := localAPI(t)
	code, out, errOut := egress(api, "proxies", "create", "eu", "--provider", "hetzner", "--region", "eu-central", "--zone", "fsn1", "--allow", "203.0.113.0/24", "--static")
	if code != 0 {
		t.Fatalf("create on hetzner: %d\n%s%s", code, out, errOut)
	}
	p, err := st.Get(context.Background(), proxy.Key{Namespace: "demo", Name: "eu"})
	if err != nil || p.Spec.Provider != hetzner.Type || p.Spec.Placement.Zone != "fsn1" || p.Spec.IPPolicy != proxy.IPStatic {
		t.Errorf("the stored spec: %+v, %v", p, err)
	}
	code, _, errOut = egress(api, "proxies", "create", "us", "--provider", "hetzner", "--region", "eu-central", "--zone", "ash", "--allow", "203.0.113.0/24")
	if code != 2 || !strings.Contains(errOut, "spec.placement.zone") || !strings.Contains(errOut, "is not a location of network zone") {
		t.Errorf("a location of another network zone: %d\n%s", code, errOut)
	}
	code, _, errOut = egress(api, "pools", "put", "eu", "--provider", "hetzner", "--region", "eu-central", "--size", "1")
	if code != 2 || !strings.Contains(errOut, "provider: hetzner cannot") || !strings.Contains(errOut, "warm pool") {
		t.Errorf("a warm pool on hetzner: %d\n%s", code, errOut)
	}
	_, help, _ := egress(api, "proxies", "create", "--help")
	for _, want := range []string{"eu-central     fsn1 (Falkenstein), nbg1 (Nuremberg), hel1 (Helsinki)", "--provider hetzner --region eu-central --zone fsn1"} {
		if !strings.Contains(help, want) {
			t.Errorf("egress proxies create --help says nothing of %q:\n%s", want, help)
		}
	}
}

// TestCreateOnAWS: --provider aws takes a region and an availability
// zone of it, as the help lists them; a zone of another region, a region
// the platform does not allow, or a warm pool on AWS, is the API's 400.
func TestCreateOnAWS(t *testing.T) {
	api, st := localAPI(t)
	code, out, errOut := egress(api, "proxies", "create", "us", "--provider", "aws", "--region", "us-east-1", "--zone", "us-east-1c", "--allow", "203.0.113.0/24", "--static")
	if code != 0 {
		t.Fatalf("create on aws: %d\n%s%s", code, out, errOut)
	}
	p, err := st.Get(context.Background(), proxy.Key{Namespace: "demo", Name: "us"})
	if err != nil || p.Spec.Provider != awsprovider.Type || p.Spec.Placement.Zone != "us-east-1c" || p.Spec.IPPolicy != proxy.IPStatic {
		t.Errorf("the stored spec: %+v, %v", p, err)
	}
	code, _, errOut = egress(api, "proxies", "create", "eu", "--provider", "aws", "--region", "us-east-1", "--zone", "eu-west-1a", "--allow", "203.0.113.0/24")
	if code != 2 || !strings.Contains(errOut, "spec.placement.zone") || !strings.Contains(errOut, "is not an availability zone of region") {
		t.Errorf("a zone of another region: %d\n%s", code, errOut)
	}
	code, _, errOut = egress(api, "proxies", "create", "sg", "--provider", "aws", "--region", "ap-southeast-1", "--allow", "203.0.113.0/24")
	if code != 2 || !strings.Contains(errOut, "spec.placement.region") || !strings.Contains(errOut, "not a region this platform allows") {
		t.Errorf("a region the platform does not allow: %d\n%s", code, errOut)
	}
	code, _, errOut = egress(api, "pools", "put", "us", "--provider", "aws", "--region", "us-east-1", "--size", "1")
	if code != 2 || !strings.Contains(errOut, "provider: aws cannot") || !strings.Contains(errOut, "warm pool") {
		t.Errorf("a warm pool on aws: %d\n%s", code, errOut)
	}
	_, help, _ := egress(api, "proxies", "create", "--help")
	for _, want := range []string{"us-east-1      N. Virginia    us-east-1a … us-east-1f", "--provider aws --region us-east-1"} {
		if !strings.Contains(help, want) {
			t.Errorf("egress proxies create --help says nothing of %q:\n%s", want, help)
		}
	}
}

// TestLiveChangesCommands: update and rotate-credentials change the proxy
// as the API answers, and a flag-less update is refused before any call.
func TestLiveChangesCommands(t *testing.T) {
	api, st := localAPI(t)
	code, stdout, stderr := egress(api, "proxies", "update", "p", "--allowed-source-range", "198.51.100.0/24,203.0.113.0/24", "--connect-port", "443", "--connect-port", "8443", "-o", "json")
	var p proxy.Proxy
	if code != exitOK || json.Unmarshal([]byte(stdout), &p) != nil {
		t.Fatalf("update: exit %d\n%s\n%s", code, stdout, stderr)
	}
	on := true // a change writes the access log as it is: on
	want := proxy.Spec{Provider: mock.Type, Port: 3128, IPPolicy: proxy.IPEphemeral, Placement: proxy.Placement{Region: "us-central1"},
		AllowedSourceRanges: []string{"198.51.100.0/24", "203.0.113.0/24"}, ConnectPorts: []int32{443, 8443}, AccessLog: &on}
	if diff := cmp.Diff(want, p.Spec); diff != "" || p.Generation != 2 {
		t.Errorf("after update: generation %d, want 2; spec (-want +got):\n%s", p.Generation, diff)
	}
	p = proxy.Proxy{}
	if code, stdout, _ = egress(api, "proxies", "update", "p", "--default-connect-ports", "-o", "json"); code != exitOK || json.Unmarshal([]byte(stdout), &p) != nil || p.Spec.ConnectPorts != nil || p.Generation != 3 {
		t.Errorf("update --default-connect-ports: exit %d, connectPorts %v, generation %d; want none and 3\n%s", code, p.Spec.ConnectPorts, p.Generation, stdout)
	}
	if code, _, stderr = egress(api, "proxies", "update", "p", "--allowed-source-range", "0.0.0.0/0"); code != exitInvalid || !strings.Contains(stderr, "spec.allowedSourceRanges[0]: ") {
		t.Errorf("an update the policy refuses: exit %d, want %d naming the range\n%s", code, exitInvalid, stderr)
	}
	if code, _, stderr = egress(api, "proxies", "update", "p"); code != exitInvalid || !strings.Contains(stderr, "at least one of the flags") {
		t.Errorf("update with nothing to change: exit %d, want %d\n%s", code, exitInvalid, stderr)
	}

	before, _ := st.Get(context.Background(), proxy.Key{Namespace: "demo", Name: "p"})
	code, stdout, stderr = egress(api, "proxies", "rotate-credentials", "p", "-o", "json")
	if code != exitOK || json.Unmarshal([]byte(stdout), &p) != nil {
		t.Fatalf("rotate-credentials: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if old := before.Reconciler.Credentials.URL(before.Status.Endpoint); p.Status.ProxyURL == "" || p.Status.ProxyURL == old || p.Generation != 4 {
		t.Errorf("rotate-credentials: proxyURL %q (before %q), generation %d; want new credentials and generation 4", p.Status.ProxyURL, old, p.Generation)
	}
	// The reconciler records the VM serving generation 4: --wait ends.
	served, _ := st.Get(context.Background(), p.Key())
	served.Status.ObservedGeneration = served.Generation
	if _, err := st.UpdateStatus(context.Background(), served); err != nil {
		t.Fatal(err)
	}
	// A change to what it has is no change: the VM serves it already.
	if code, stdout, stderr = egress(api, "proxies", "update", "p", "--default-connect-ports", "--wait", "--timeout", "10s"); code != exitOK || !strings.Contains(stdout, "phase:") {
		t.Errorf("update --wait of what the VM serves: exit %d, want %d\n%s\n%s", code, exitOK, stdout, stderr)
	}
	if code, _, stderr = egress(api, "proxies", "rotate-credentials", "p", "--wait", "--timeout", "2s"); code != exitFailed || !strings.Contains(stderr, "context deadline exceeded") {
		t.Errorf("rotate-credentials --wait before the VM serves generation 5: exit %d, want %d and the deadline\n%s", code, exitFailed, stderr)
	}
}

// TestPoolsCommands: a pool's life through the CLI.
func TestPoolsCommands(t *testing.T) {
	api, _ := localAPI(t)
	steps := []struct {
		args     []string
		wantCode int
		want     string
	}{
		{args: []string{"pools", "put", "warm", "--region", "us-central1", "--zone", "us-central1-a", "--size", "2"}, wantCode: exitOK, want: "size:"},
		{args: []string{"pools", "put", "warm", "--region", "us-central1", "--zone", "us-central1-b", "--size", "2"}, wantCode: exitInvalid, want: "spec.placement: pool warm has placement"},
		{args: []string{"pools", "put", "cold", "--region", "us-central1", "--size", "101"}, wantCode: exitInvalid, want: "size: 101 is outside 0-100"},
		{args: []string{"pools", "put", "warm", "--region", "us-central1", "--zone", "us-central1-a", "--size", "3", "-o", "json"}, wantCode: exitOK, want: `"size": 3`},
		{args: []string{"pools", "put", "warm", "--region", "us-central1", "--zone", "us-central1-a", "--size", "3", "--claims-per-namespace-per-hour", "2"}, wantCode: exitOK, want: "claimsPerNamespacePerHour:  2"},
		{args: []string{"pools", "put", "warm", "--region", "us-central1", "--zone", "us-central1-a", "--size", "3", "--claims-per-namespace-per-hour", "-1"}, wantCode: exitInvalid, want: "claimsPerNamespacePerHour: -1 is outside 0-6000"},
		{args: []string{"pools", "list"}, wantCode: exitOK, want: "warm  mock      us-central1  us-central1-a  3"},
		{args: []string{"pools", "get", "warm", "-o", "json"}, wantCode: exitOK, want: `"claimsLastHour": 0`},
		{args: []string{"pools", "delete", "warm"}, wantCode: exitOK, want: "deleting since:"},
		{args: []string{"pools", "get", "absent"}, wantCode: exitFailed, want: "404 NOT_FOUND, POOL_NOT_FOUND"},
		{args: []string{"pools", "put", "x", "--size", "1"}, wantCode: exitInvalid, want: `required flag(s) "region" not set`},
	}
	for i, st := range steps {
		code, stdout, stderr := egress(api, st.args...)
		if code != st.wantCode || !strings.Contains(stdout+stderr, st.want) {
			t.Errorf("step %d: egress %s: exit %d, want %d and %q\nstdout:\n%s\nstderr:\n%s", i, strings.Join(st.args, " "), code, st.wantCode, st.want, stdout, stderr)
		}
	}
}

// TestDataPlaneCommands: create sends --socks5-port, --bandwidth-limit and
// --access-log; update changes the limit and the access log live; get
// shows what the VM last reported of its traffic.
func TestDataPlaneCommands(t *testing.T) {
	api, st := localAPI(t)
	steps := []struct {
		args     []string
		wantCode int
		want     string
	}{
		{args: []string{"proxies", "create", "s", "--region", "us-central1", "--allow", "203.0.113.0/24", "--socks5-port", "3128"}, wantCode: exitInvalid,
			want: "spec.socks5Port: 3128 is spec.port"},
		{args: []string{"proxies", "create", "b", "--region", "us-central1", "--allow", "203.0.113.0/24", "--bandwidth-limit", "100MB"}, wantCode: exitInvalid,
			want: `spec.bandwidthLimit: "100MB" is not a bandwidth such as 100Mbit`},
		{args: []string{"proxies", "create", "quiet", "--region", "us-central1", "--allow", "203.0.113.0/24", "--bandwidth-limit", "20Mbit", "--access-log=false", "-o", "json"}, wantCode: exitOK,
			want: `"bandwidthLimit": "20Mbit",` + "\n" + `    "accessLog": false`},
		{args: []string{"proxies", "create", "loud", "--region", "us-central1", "--allow", "203.0.113.0/24"}, wantCode: exitOK, want: "accessLog:            on"},
		{args: []string{"proxies", "update", "p", "--bandwidth-limit", "100Mbit", "--access-log=false"}, wantCode: exitOK, want: "bandwidthLimit:       100Mbit\naccessLog:            off"},
		{args: []string{"proxies", "update", "p", "--no-bandwidth-limit", "-o", "json"}, wantCode: exitOK, want: `"generation": 3`},
		{args: []string{"proxies", "update", "p", "--bandwidth-limit", "1Mbit", "--no-bandwidth-limit"}, wantCode: exitInvalid, want: "none of the others can be"},
		{args: []string{"proxies", "update", "p", "--bandwidth-limit", "lots"}, wantCode: exitInvalid, want: "spec.bandwidthLimit"},
		{args: []string{"proxies", "create", "v6", "--region", "us-central1", "--allow", "203.0.113.0/24", "--ipv6-egress", "perConnection"}, wantCode: exitInvalid,
			want: `spec.ipv6Egress: perConnection picks source addresses of the VM's routed IPv6 prefix, and provider "mock" gives its VMs none`},
		{args: []string{"proxies", "create", "v6", "--region", "us-central1", "--allow", "203.0.113.0/24"}, wantCode: exitOK, want: "ipv6Egress:           off"},
		{args: []string{"proxies", "update", "p", "--ipv6-egress", "single"}, wantCode: exitOK, want: "ipv6Egress:           single"},
	}
	for i, s := range steps {
		code, stdout, stderr := egress(api, s.args...)
		if code != s.wantCode || !strings.Contains(stdout+stderr, s.want) {
			t.Errorf("step %d: egress %s: exit %d, want %d and %q\nstdout:\n%s\nstderr:\n%s", i, strings.Join(s.args, " "), code, s.wantCode, s.want, stdout, stderr)
		}
	}
	if p, _ := st.Get(context.Background(), proxy.Key{Namespace: "demo", Name: "p"}); p.Spec.BandwidthLimit != "" || p.Spec.AccessLogOn() {
		t.Errorf("after the updates: bandwidthLimit %q, access log on %v; want none and off", p.Spec.BandwidthLimit, p.Spec.AccessLogOn())
	}

	p, _ := st.Get(context.Background(), proxy.Key{Namespace: "demo", Name: "p"})
	p.Status.Traffic = &proxy.Traffic{BytesIn: 1_234_567, BytesOut: 9_876_543_210, Connections: 42, ReportTime: time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)}
	p.Status.IPv6, p.Status.IPv6Prefix = "2600:1900:4000:1::", "2600:1900:4000:1::/96"
	if _, err := st.UpdateStatus(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := egress(api, "proxies", "get", "p")
	for _, want := range []string{
		"ipv6:                 2600:1900:4000:1::\n",
		"ipv6Prefix:           2600:1900:4000:1::/96\n",
		"bytesIn:              1234567 (1.2 MB, from clients)\n",
		"bytesOut:             9876543210 (9.9 GB, to clients)\n",
		"connections:          42\n",
		"trafficReported:      2026-12-03T10:00:00Z\n",
	} {
		if code != exitOK || !strings.Contains(stdout, want) {
			t.Errorf("proxies get: exit %d, want %q in\n%s\n%s", code, want, stdout, stderr)
		}
	}
}

// TestGetShowsConnectPorts: `proxies get` shows the ports a CONNECT may
// reach, the ones the proxy was given, or the default with the word
// default, so a 403 to a CONNECT can be read against the proxy itself.
func TestGetShowsConnectPorts(t *testing.T) {
	api, _ := localAPI(t)
	cases := map[string]struct {
		reason string
		create []string
		want   string
	}{
		"Given": {
			reason: "the ports of --connect-port, in the order given",
			create: []string{"--connect-port", "8443", "--connect-port", "443"},
			want:   "connectPorts:         8443, 443\n",
		},
		"Default": {
			reason: "a proxy given none reaches 443 and 80, and says that is the default",
			want:   "connectPorts:         443, 80 (the default)\n",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			n := strings.ToLower(name)
			args := append([]string{"proxies", "create", n, "--region", "us-central1", "--allowed-source-range", "203.0.113.0/24"}, tc.create...)
			if code, stdout, stderr := egress(api, args...); code != exitOK {
				t.Fatalf("egress %s: exit %d\n%s%s", strings.Join(args, " "), code, stdout, stderr)
			}
			code, stdout, stderr := egress(api, "proxies", "get", n)
			if code != exitOK || !strings.Contains(stdout, tc.want) {
				t.Errorf("%s: proxies get %s: exit %d, want %q in\n%s%s", tc.reason, n, code, tc.want, stdout, stderr)
			}
		})
	}
}
