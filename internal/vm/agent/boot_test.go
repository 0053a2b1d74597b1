package agent_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/internal/vm/agent"
	"github.com/egress-proxies/egress/internal/vm/imagetest"
	"github.com/egress-proxies/egress/internal/vm/imds/imdsmock"
	"github.com/egress-proxies/egress/internal/vm/vmconfig"
)

// TestBoot: on a cloud-init boot the agent reads its settings from the
// files the user-data wrote and says what it serves in the readiness
// file, never on the metadata server (which carries neither there) and
// never by a call-home: a configuration that serves is ready at its
// generation, one that does not load says why.
func TestBoot(t *testing.T) {
	cases := map[string]struct {
		reason string
		// config is the configuration applied, from the fixture's
		// generation-4 one when empty.
		config string
		want   vmconfig.Readiness
		// wantServing is alice's CONNECT's answer after the apply.
		wantServing int
	}{
		"serves": {
			reason: "the self-test passes through the probe target of the boot's setting, and the file says generation 4 is served",
			want:   vmconfig.Readiness{Generation: 4, Ready: true}, wantServing: 200,
		},
		"does not load": {
			reason: "a configuration the engine cannot read is said in one line, at no generation",
			config: `{"generation": 5, "listen": ":3128"`,
			want:   vmconfig.Readiness{Error: "engine: reading the configuration: unexpected EOF"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := setUp(t)
			boot := agent.Boot{Dir: t.TempDir(), Readiness: filepath.Join(t.TempDir(), "run", "readiness.json")}
			// The GCE metadata server's probe target is not the boot's:
			// the agent must read the boot's.
			f.md.SetAttributes(map[string]string{vmconfig.KeyProbeTarget: "192.0.2.1:9"})
			if err := os.WriteFile(filepath.Join(boot.Dir, vmconfig.KeyProbeTarget), []byte(f.target), 0o600); err != nil {
				t.Fatal(err)
			}
			f.agent.Reporter = boot
			text := tc.config
			if text == "" {
				text = f.config(t, 4, nil, "alice")
			}
			err := f.agent.Apply(context.Background(), text, false)
			if (err == nil) != tc.want.Ready {
				t.Fatalf("%s\nApply: %v", tc.reason, err)
			}
			b, err := os.ReadFile(boot.Readiness)
			if err != nil {
				t.Fatalf("%s\nno readiness file: %v", tc.reason, err)
			}
			var got vmconfig.Readiness
			if err := json.Unmarshal(b, &got); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nreadiness (-want +got):\n%s", tc.reason, diff)
			}
			if fi, err := os.Stat(boot.Readiness); err != nil || fi.Mode().Perm() != 0o644 {
				t.Errorf("the readiness file's mode %v (%v), want 0644: the engine's user reads it", fi.Mode(), err)
			}
			if ga := f.md.GuestAttributes(); len(ga) != 0 || len(f.ps.reasons()) != 0 {
				t.Errorf("%s\na boot's agent wrote guest attributes %v or called home %v", tc.reason, ga, f.ps.reasons())
			}
			if tc.wantServing != 0 {
				if code, _ := f.connect(t, "alice"); code != tc.wantServing {
					t.Errorf("alice's CONNECT: %d, want %d", code, tc.wantServing)
				}
			}
		})
	}
}

// TestBootAttr: a setting the user-data did not write is empty, and a
// name that is not a setting's is refused, never a path.
func TestBootAttr(t *testing.T) {
	b := agent.Boot{Dir: t.TempDir()}
	if v, err := b.Attr(vmconfig.KeyEngineURL); v != "" || err != nil {
		t.Errorf("an absent setting: %q, %v; want empty", v, err)
	}
	if _, err := b.Attr("../../etc/shadow"); err == nil || !strings.Contains(err.Error(), "not a setting") {
		t.Errorf("a path as a setting's name: %v, want refused", err)
	}
}

// TestBootIdentifiesTheEC2Instance: on EC2 (the setting egress-imds),
// the agent asks the metadata service, here AWS's own mock with IMDSv2
// required, which instance it is, and the readiness file says it beside
// the generation served; without the setting it asks nothing.
func TestBootIdentifiesTheEC2Instance(t *testing.T) {
	base, err := imdsmock.Start(context.Background(), t.TempDir(), agent.EC2Instance)
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		reason string
		imds   string
		want   vmconfig.Readiness
	}{
		"EC2":    {reason: "the instance's id and zone, read with a token", imds: base, want: vmconfig.Readiness{Generation: 4, Ready: true, Instance: "i-0feedbeef1234567a", Zone: "eu-central-1a"}},
		"NoIMDS": {reason: "a cloud-init boot of another cloud reads no instance", want: vmconfig.Readiness{Generation: 4, Ready: true}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			boot := agent.Boot{Dir: t.TempDir(), Readiness: filepath.Join(t.TempDir(), "readiness.json")}
			if tc.imds != "" {
				if err := os.WriteFile(filepath.Join(boot.Dir, vmconfig.KeyIMDS), []byte(tc.imds+"\n"), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			if err := boot.Identify(context.Background()); err != nil {
				t.Fatal(err)
			}
			if err := boot.Ready(context.Background(), 4); err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(boot.Readiness)
			if err != nil {
				t.Fatal(err)
			}
			var got vmconfig.Readiness
			if err := json.Unmarshal(b, &got); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nreadiness (-want +got):\n%s", tc.reason, diff)
			}
		})
	}
	// A service that refuses (here: no such path on the mock's root) is
	// an error naming it, never an identity.
	boot := agent.Boot{Dir: t.TempDir()}
	if err := os.WriteFile(filepath.Join(boot.Dir, vmconfig.KeyIMDS), []byte(base+"/nowhere"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := boot.Identify(context.Background()); err == nil || boot.Instance != "" {
		t.Errorf("Identify against a path the service does not serve: %v, instance %q; want an error and none", err, boot.Instance)
	}
}

// TestBootIdentifiesTheAzureVM: on Azure (the setting egress-imds names
// IMDS's /metadata root), the agent asks the stand-in of Azure's IMDS
// which VM it is, and the readiness file says its vmId, and its location
// with its zone.
func TestBootIdentifiesTheAzureVM(t *testing.T) {
	md := &imagetest.AzureMetadata{VMID: "8d1f3c2a-55e4-4f0b-9a7e-2b6c1d0e9f31", Name: "egress-vm", Location: "westeurope", Zone: "2"}
	srv := httptest.NewServer(md)
	t.Cleanup(srv.Close)
	boot := agent.Boot{Dir: t.TempDir(), Readiness: filepath.Join(t.TempDir(), "readiness.json")}
	if err := os.WriteFile(filepath.Join(boot.Dir, vmconfig.KeyIMDS), []byte(srv.URL+"/metadata\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := boot.Identify(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := boot.Ready(context.Background(), 4); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(boot.Readiness)
	if err != nil {
		t.Fatal(err)
	}
	var got vmconfig.Readiness
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	want := vmconfig.Readiness{Generation: 4, Ready: true, Instance: "8d1f3c2a-55e4-4f0b-9a7e-2b6c1d0e9f31", Zone: "westeurope-2"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("readiness (-want +got):\n%s", diff)
	}
	if reqs := md.Requests(); len(reqs) != 1 || reqs[0].Flavor != "true" || !strings.HasPrefix(reqs[0].URI, "/metadata/instance/compute?api-version=") {
		t.Errorf("IMDS was asked %+v, want one GET of /metadata/instance/compute with Metadata: true", reqs)
	}
}

// TestBootEgress: a follower's report (FollowEnv.Report) changes the
// egress of the readiness file the apply wrote, and nothing else of it;
// without that file there is nothing to say it in.
func TestBootEgress(t *testing.T) {
	dir := t.TempDir()
	b := agent.Boot{Dir: dir, Readiness: filepath.Join(dir, "run", "readiness.json")}
	if err := b.Egress(context.Background(), "203.0.113.50"); err == nil {
		t.Errorf("Egress with no readiness file: no error")
	}
	if err := b.Ready(context.Background(), 3); err != nil {
		t.Fatal(err)
	}
	if err := b.Egress(context.Background(), "203.0.113.50"); err != nil {
		t.Fatal(err)
	}
	body, err := os.ReadFile(b.Readiness)
	if err != nil {
		t.Fatal(err)
	}
	var got vmconfig.Readiness
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(vmconfig.Readiness{Generation: 3, Ready: true, Egress: "203.0.113.50"}, got); diff != "" {
		t.Errorf("readiness (-want +got):\n%s", diff)
	}
}
