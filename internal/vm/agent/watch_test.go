package agent_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/internal/bootstrap/cloudinit"
	"github.com/egress-proxies/egress/internal/vm/agent"
	"github.com/egress-proxies/egress/internal/vm/imagetest"
	"github.com/egress-proxies/egress/internal/vm/vmconfig"
)

// azureFixture is a cloud-init boot whose user data changes in place:
// the agent's fixture with the boot's settings and readiness file as its
// Reporter, generation 1 applied as the boot's script applies it, and
// the image test's stand-in of Azure's IMDS serving that user data.
type azureFixture struct {
	*fixture
	boot  agent.Boot
	imds  *imagetest.AzureMetadata
	watch *agent.UserDataWatch
}

func setUpAzure(t *testing.T) *azureFixture {
	t.Helper()
	f := &azureFixture{fixture: setUp(t)}
	f.boot = agent.Boot{Dir: t.TempDir(), Readiness: filepath.Join(t.TempDir(), "readiness.json")}
	if err := os.WriteFile(filepath.Join(f.boot.Dir, vmconfig.KeyProbeTarget), []byte(f.target), 0o600); err != nil {
		t.Fatal(err)
	}
	f.agent.Reporter = f.boot
	f.imds = &imagetest.AzureMetadata{VMID: "8d1f3c2a-55e4-4f0b-9a7e-2b6c1d0e9f31", Name: "egress-vm", Location: "westeurope"}
	srv := httptest.NewServer(f.imds)
	t.Cleanup(srv.Close)
	f.watch = &agent.UserDataWatch{Agent: f.agent, Boot: f.boot, URL: srv.URL + "/metadata/instance/compute/userData?api-version=2021-01-01&format=text"}
	first := f.config(t, 1, nil, "alice")
	f.setUserData(t, first)
	if err := os.WriteFile(filepath.Join(f.boot.Dir, vmconfig.KeyConfig), []byte(first), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := f.agent.Apply(context.Background(), first, false); err != nil {
		t.Fatal(err)
	}
	return f
}

// setUserData makes the VM's userData a user-data of package cloudinit's
// carrying config, as the Azure provider's PATCH sets it: base64.
func (f *azureFixture) setUserData(t *testing.T, config string) {
	t.Helper()
	var cfg vmconfig.Config
	if err := json.Unmarshal([]byte(config), &cfg); err != nil {
		t.Fatal(err)
	}
	ud, err := cloudinit.Render(cfg, cloudinit.Settings{EngineURL: "http://192.0.43.13/egress-proxy", EngineSHA256: strings.Repeat("ab", 32),
		WatchUserData: vmconfig.AzureUserDataURL})
	if err != nil {
		t.Fatal(err)
	}
	f.imds.SetUserData(base64.StdEncoding.EncodeToString([]byte(ud)))
}

func (f *azureFixture) readiness(t *testing.T) vmconfig.Readiness {
	t.Helper()
	b, err := os.ReadFile(f.boot.Readiness)
	if err != nil {
		t.Fatal(err)
	}
	var r vmconfig.Readiness
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	return r
}

// TestUserDataWatch: on a VM whose user data changes in place (Azure's),
// the agent reads it from IMDS with the header "Metadata: true" and no
// forwarding header, and applies a new generation once: bob is served
// and alice's password revoked, the readiness file says generation 2,
// and the boot's egress-config is the new one, for a reboot; reading the
// same user data again applies nothing. A user data that is no
// user-data of this project's is refused, with the reason in the
// readiness file beside the generation served still, and not reported
// again until it changes; a configuration the self-test refuses is
// rolled back, and the readiness names the generation refused.
func TestUserDataWatch(t *testing.T) {
	f := setUpAzure(t)
	ctx := context.Background()
	type state struct {
		Outcomes  []agent.Outcome
		Readiness vmconfig.Readiness
		Alice     int
		Bob       int
	}
	check := func(n int) []agent.Outcome {
		var out []agent.Outcome
		for range n {
			o, _ := f.watch.Check(ctx)
			out = append(out, o)
		}
		return out
	}
	got := state{Outcomes: check(2), Readiness: f.readiness(t)}
	got.Alice, _ = f.connect(t, "alice")
	if diff := cmp.Diff(state{Outcomes: []agent.Outcome{agent.Unchanged, agent.Unchanged}, Readiness: vmconfig.Readiness{Generation: 1, Ready: true}, Alice: 200}, got); diff != "" {
		t.Errorf("the user data the VM booted with (-want +got):\n%s", diff)
	}

	_, aliceTunnel := f.connect(t, "alice")
	second := f.config(t, 2, nil, "bob")
	f.setUserData(t, second)
	got = state{Outcomes: check(3), Readiness: f.readiness(t)}
	got.Alice, _ = f.connect(t, "alice")
	got.Bob, _ = f.connect(t, "bob")
	if diff := cmp.Diff(state{Outcomes: []agent.Outcome{agent.Applied, agent.Unchanged, agent.Unchanged}, Readiness: vmconfig.Readiness{Generation: 2, Ready: true}, Alice: 407, Bob: 200}, got); diff != "" {
		t.Errorf("a new generation in the user data (-want +got):\n%s", diff)
	}
	if echoes(aliceTunnel, "revoked") {
		t.Error("alice's tunnel is open after her password was revoked")
	}
	if b, err := os.ReadFile(filepath.Join(f.boot.Dir, vmconfig.KeyConfig)); err != nil || string(b) != second {
		t.Errorf("the boot's egress-config after the change: %q (%v), want generation 2's, for a reboot", b, err)
	}

	_, bobTunnel := f.connect(t, "bob")
	f.imds.SetUserData("this is not base64!")
	got = state{Outcomes: check(2), Readiness: f.readiness(t)}
	got.Bob, _ = f.connect(t, "bob")
	reason := got.Readiness.Error
	got.Readiness.Error = ""
	if diff := cmp.Diff(state{Outcomes: []agent.Outcome{agent.Refused, agent.Unchanged}, Readiness: vmconfig.Readiness{Generation: 2, Ready: true}, Bob: 200}, got); diff != "" {
		t.Errorf("a user data that is not base64 (-want +got):\n%s", diff)
	}
	if !strings.Contains(reason, "not one to apply") || !strings.Contains(reason, "base64") || !strings.Contains(reason, "served before is served still") {
		t.Errorf("the readiness's reason %q does not say the user data is refused, why, and that generation 2 is served still", reason)
	}
	f.imds.SetUserData(base64.StdEncoding.EncodeToString([]byte("#!/bin/sh\necho a user's own script\n")))
	if o, err := f.watch.Check(ctx); o != agent.Refused || err == nil || !strings.Contains(err.Error(), "#cloud-config") {
		t.Errorf("a user data that is not a cloudinit.Render one: %s, %v; want refused, naming what it lacks", o, err)
	}
	if !echoes(bobTunnel, "kept") {
		t.Error("bob's tunnel was closed by a refused user data")
	}

	// A configuration whose self-test fails: its probe target's port is
	// closed.
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed.Close()
	if err := os.WriteFile(filepath.Join(f.boot.Dir, vmconfig.KeyProbeTarget), []byte(closed.Addr().String()), 0o600); err != nil {
		t.Fatal(err)
	}
	f.setUserData(t, withPort(t, f.config(t, 3, nil, "carol"), mustPort(closed.Addr().String())))
	got = state{Outcomes: check(2), Readiness: f.readiness(t)}
	got.Bob, _ = f.connect(t, "bob")
	refused, ok := vmconfig.RefusedGeneration(got.Readiness.Error)
	got.Readiness.Error = ""
	if diff := cmp.Diff(state{Outcomes: []agent.Outcome{agent.Refused, agent.Unchanged}, Readiness: vmconfig.Readiness{Generation: 2, Ready: true}, Bob: 200}, got); diff != "" {
		t.Errorf("a generation the self-test refuses (-want +got):\n%s", diff)
	}
	if !ok || refused != 3 {
		t.Errorf("the readiness's reason names generation %d (%t), want 3", refused, ok)
	}
	if b, _ := os.ReadFile(filepath.Join(f.boot.Dir, vmconfig.KeyConfig)); string(b) != second {
		t.Errorf("the boot's egress-config after a refused change: %q, want generation 2's", b)
	}

	// Every read asked as IMDS wants it.
	reqs := f.imds.Requests()
	var wrong []imagetest.Request
	for _, r := range reqs {
		if r.Flavor != "true" || r.Forwarded != "" || r.Method != "GET" {
			wrong = append(wrong, r)
		}
	}
	if len(reqs) != 10 || len(wrong) != 0 {
		t.Errorf("IMDS saw %d reads, want 10, and these without Metadata: true or with a forwarding header: %+v", len(reqs), wrong)
	}
}

// TestUserDataWatchUnreachable: a service that does not answer the user
// data is an outcome of its own, which changes nothing the VM says.
func TestUserDataWatchUnreachable(t *testing.T) {
	f := setUpAzure(t)
	f.watch.URL = strings.Replace(f.watch.URL, "/userData", "/nothing", 1)
	o, err := f.watch.Check(context.Background())
	if o != agent.Unreachable || err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("a read IMDS answers 404: %s, %v; want unreachable, naming the status", o, err)
	}
	if diff := cmp.Diff(vmconfig.Readiness{Generation: 1, Ready: true}, f.readiness(t)); diff != "" {
		t.Errorf("the readiness after an unanswered read (-want +got):\n%s", diff)
	}
}

// TestUserDataWatchPace: the watch reads every interval, and after
// reads the service did not answer, twice as long each time, up to its
// longest wait; the first answer brings it back to the interval.
func TestUserDataWatchPace(t *testing.T) {
	w := agent.UserDataWatch{Interval: 5 * time.Second, MaxBackoff: time.Minute}
	var got []time.Duration
	wait := time.Duration(0)
	for _, o := range []agent.Outcome{agent.Unchanged, agent.Unreachable, agent.Unreachable, agent.Unreachable, agent.Unreachable, agent.Unreachable, agent.Applied, agent.Refused} {
		wait = agent.NextWait(&w, o, wait)
		got = append(got, wait)
	}
	s := time.Second
	want := []time.Duration{5 * s, 10 * s, 20 * s, 40 * s, 60 * s, 60 * s, 5 * s, 5 * s}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the waits (-want +got):\n%s", diff)
	}
}

// TestChangeThatDoesNotLoad: a change whose configuration does not load
// touches nothing, and the readiness says the generation served is
// served still, ready, with the reason beside it; at the first boot the
// same configuration leaves the VM not ready (TestBoot).
func TestChangeThatDoesNotLoad(t *testing.T) {
	f := setUpAzure(t)
	err := f.agent.Apply(context.Background(), `{"generation": 5, "listen": ":3128"`, true)
	got := f.readiness(t)
	reason := got.Error
	got.Error = ""
	if diff := cmp.Diff(vmconfig.Readiness{Generation: 1, Ready: true}, got); diff != "" || err == nil {
		t.Errorf("after a change that does not load (Apply: %v) (-want +got):\n%s", err, diff)
	}
	if !strings.Contains(reason, "unexpected EOF") || !strings.Contains(reason, "served before is served still") {
		t.Errorf("the readiness's reason %q does not say why, and that generation 1 is served still", reason)
	}
	if code, _ := f.connect(t, "alice"); code != 200 {
		t.Errorf("alice after the refused change: %d, want 200", code)
	}
}

// TestUserDataWatchTrafficStop: the budget's stop comes at the generation
// served (the spec did not change; internal/reconcile's stop.go), so a
// user data whose configuration differs from the one served only by its
// trafficStop is applied. The engine then refuses alice's new CONNECT
// (403) and carries her open tunnel, the self-test takes the refusal as
// proof the configuration is served rather than rolling it back, and the
// readiness says generation 1, ready; the same user data read again
// applies nothing, and one without the stop carries again.
func TestUserDataWatchTrafficStop(t *testing.T) {
	f := setUpAzure(t)
	ctx := context.Background()
	type state struct {
		Outcomes  []agent.Outcome
		Readiness vmconfig.Readiness
		Served    *vmconfig.TrafficStop
		Alice     int
	}
	look := func(checks int) state {
		t.Helper()
		var s state
		for range checks {
			o, err := f.watch.Check(ctx)
			if err != nil {
				t.Logf("check: %v", err)
			}
			s.Outcomes = append(s.Outcomes, o)
		}
		s.Readiness = f.readiness(t)
		s.Served = f.host.server.Stats().TrafficStop
		s.Alice, _ = f.connect(t, "alice")
		return s
	}
	// The engine's own month: a stop of another month lapses at once.
	month := f.host.server.Stats().Month
	stop := &vmconfig.TrafficStop{Month: month, Reason: "the namespace's month reached its budget"}
	_, tunnel := f.connect(t, "alice")

	f.setUserData(t, withStop(t, f.config(t, 1, nil, "alice"), stop))
	if diff := cmp.Diff(state{Outcomes: []agent.Outcome{agent.Applied, agent.Unchanged}, Readiness: vmconfig.Readiness{Generation: 1, Ready: true},
		Served: stop, Alice: 403}, look(2)); diff != "" {
		t.Errorf("the stop at generation 1 (-want +got):\n%s", diff)
	}
	if !echoes(tunnel, "open before the stop") {
		t.Error("alice's tunnel, open before the stop, was closed by it")
	}

	f.setUserData(t, f.config(t, 1, nil, "alice"))
	if diff := cmp.Diff(state{Outcomes: []agent.Outcome{agent.Applied, agent.Unchanged}, Readiness: vmconfig.Readiness{Generation: 1, Ready: true},
		Alice: 200}, look(2)); diff != "" {
		t.Errorf("the stop lifted at generation 1 (-want +got):\n%s", diff)
	}
}

// withStop is the configuration text with stop as its trafficStop.
func withStop(t *testing.T, text string, stop *vmconfig.TrafficStop) string {
	t.Helper()
	var c vmconfig.Config
	if err := json.Unmarshal([]byte(text), &c); err != nil {
		t.Fatal(err)
	}
	c.TrafficStop = stop
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
