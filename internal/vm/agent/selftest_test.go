package agent_test

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"

	"github.com/egress-proxies/egress/internal/bootstrap"
	"github.com/egress-proxies/egress/internal/proxy"
	"github.com/egress-proxies/egress/internal/vm/vmconfig"
)

// TestEveryAcceptedSpecPassesTheSelfTest is a property: every spec the
// API accepts (proxy.Spec.Validate under the default policy) can be
// served. Specs are drawn at random — CONNECT ports among the probe's
// own, the defaults, 8443 alone and ports nothing listens on, source
// ranges and proxy ports valid and not — and each accepted one is
// rendered as the reconciler renders it (bootstrap.EngineConfig), then
// applied by the agent to the real engine with the self-test's probe
// target on the port the fixture's echo server holds. Every apply must
// pass its self-test and report its generation: with the probe's port
// allowed the probe is carried (200), without it the engine must refuse
// it for its port (403), never fail the VM.
func TestEveryAcceptedSpecPassesTheSelfTest(t *testing.T) {
	f := setUp(t)
	ctx := context.Background()
	probe := int32(mustPort(f.target))
	rng := rand.New(rand.NewPCG(7, 33))
	// Mostly what the API takes, now and then what it refuses.
	ports := []int32{probe, 443, 80, 8443, 8080, 22, 65535, probe, 8443}
	badPorts := []int32{0, 70000}
	ranges := []string{"203.0.113.0/24", "198.51.100.7/32", "2001:db8::/48", "10.0.0.0/8"}
	badRanges := []string{"0.0.0.0/0", "not-a-cidr", "::ffff:192.0.2.0/120", "10.0.0.0/4"}
	pol := proxy.Policy{MinPrefixIPv4: proxy.DefaultMinPrefixIPv4, MinPrefixIPv6: proxy.DefaultMinPrefixIPv6}
	enabled := func(typ string) bool { return typ == "mock" }
	creds, err := proxy.NewCredentials()
	if err != nil {
		t.Fatal(err)
	}
	var accepted, refused, probeAllowed int
	gen := int64(0)
	for range 100 {
		spec := proxy.Spec{Provider: "mock", Placement: proxy.Placement{Region: "us-central1"}, Port: proxy.DefaultPort, IPPolicy: proxy.IPEphemeral}
		for range rng.IntN(4) {
			spec.ConnectPorts = append(spec.ConnectPorts, ports[rng.IntN(len(ports))])
		}
		if rng.IntN(8) == 0 {
			spec.ConnectPorts = append(spec.ConnectPorts, badPorts[rng.IntN(len(badPorts))])
		}
		spec.AllowedSourceRanges = []string{ranges[rng.IntN(len(ranges))]}
		if rng.IntN(8) == 0 {
			spec.AllowedSourceRanges = append(spec.AllowedSourceRanges, badRanges[rng.IntN(len(badRanges))])
		}
		if rng.IntN(10) == 0 {
			spec.Port = int32(rng.IntN(70000))
		}
		if errs := spec.Validate("team-a", pol, enabled); len(errs) > 0 {
			refused++
			continue
		}
		accepted++
		gen++
		cfg := bootstrap.ForProxy(spec, creds, nil)
		cfg.Generation = gen
		engine, err := bootstrap.EngineConfig(cfg)
		if err != nil {
			t.Fatalf("spec %+v: the API accepts it, the renderer refuses it: %v", spec, err)
		}
		if slices.Contains(spec.ConnectPorts, probe) {
			probeAllowed++
		}
		// The test's topology: the engine on the fixture's loopback port,
		// the probe target an echo server on loopback (a public host on a
		// VM), which the deny list would refuse otherwise.
		engine.Listen, engine.StatsListen = f.listen, ""
		engine.AllowDestinations = []string{"127.0.0.1/32"}
		text, err := json.Marshal(engine)
		if err != nil {
			t.Fatal(err)
		}
		f.md.SetAttributes(map[string]string{vmconfig.KeyConfig: string(text)})
		if err := f.agent.Apply(ctx, string(text), gen > 1); err != nil {
			t.Errorf("spec with connectPorts %v, port %d: the self-test failed: %v", spec.ConnectPorts, spec.Port, err)
			continue
		}
		if got := f.md.GuestAttributes()["egress/ready"]; got != strconv.FormatInt(gen, 10) {
			t.Errorf("spec with connectPorts %v: egress/ready is %q, want %d", spec.ConnectPorts, got, gen)
		}
	}
	// The draw must have covered both plans, and refusals: a property
	// tested on one kind of spec proves little.
	if accepted < 30 || refused < 10 || probeAllowed == 0 || probeAllowed == accepted {
		t.Errorf("drew %d accepted specs (%d allowing the probe's port) and %d refused: too few of a kind", accepted, probeAllowed, refused)
	}
	t.Logf("%d specs accepted and served (%d allowing the probe's port), %d refused by the API's rules", accepted, probeAllowed, refused)
}
