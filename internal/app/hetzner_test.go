package app_test

import (
	"bytes"
	"cmp"
	"context"
	"encoding/base64"
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/egress-proxies/egress/internal/app"
	"github.com/egress-proxies/egress/internal/bootstrap"
	"github.com/egress-proxies/egress/internal/bootstrap/cloudinit"
	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/provider/hetzner"
	"github.com/egress-proxies/egress/internal/provider/hetzner/hetznerfake"
	"github.com/egress-proxies/egress/internal/provider/plugin"
	"github.com/egress-proxies/egress/internal/provider/vmside"
	"github.com/egress-proxies/egress/internal/proxy"
	"github.com/egress-proxies/egress/internal/vm/vmconfig"
	"github.com/egress-proxies/egress/internal/vmstatus"
)

// vmSide is the VM side's part of the hetzner provider, as doubles.
var vmSide = plugin.VMSide{
	Renderer: hetzner.RendererFunc(func(provider.CreateRequest) (string, error) { return "#cloud-config\n", nil }),
	Prober: hetzner.ProberFunc(func(context.Context, string, int32, string, string) (hetzner.Status, error) {
		return hetzner.Status{}, errors.New("no answer")
	}),
}

// The engine binary's public URL and SHA-256, as a deployment that
// enables hetzner names them; and no budget of calls, whose store is
// Firestore, which these tests point nowhere (TestEveryProviderIsPaced
// holds the budgets).
var engineVars = map[string]string{
	"PROXY_ENGINE_SHA256":     "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
	"PROXY_ENGINE_PUBLIC_URL": "https://storage.googleapis.com/egress-engine-public/egress-proxy",
	"PACING_SCALE":            "0",
}

func withVars(m map[string]string, more map[string]string) map[string]string {
	out := maps.Clone(m)
	maps.Copy(out, more)
	return out
}

// TestHetznerVMSettings: a deployment that enables hetzner names what its
// servers need of the control plane, or stops at start-up saying which
// variable is missing, rather than making servers that cannot install the
// engine or never say they serve.
func TestHetznerVMSettings(t *testing.T) {
	t.Setenv("FIRESTORE_EMULATOR_HOST", "127.0.0.1:1")
	t.Setenv("PUBSUB_EMULATOR_HOST", "127.0.0.1:1")
	base := withVars(engineVars, map[string]string{"GOOGLE_CLOUD_PROJECT": "demo-x", "PROVIDERS": "gcp,hetzner",
		"PROXY_ENGINE_URL":        "https://storage.googleapis.com/egress-source/egress-proxy",
		"HETZNER_TOKEN_SECRET":    "projects/demo-x/secrets/egress-hetzner-token/versions/latest",
		"VM_STATUS_KEY_SECRET":    "projects/demo-x/secrets/egress-vm-status-key/versions/latest",
		"VM_STATUS_SOURCE_RANGES": "198.51.100.7/32"})
	cases := map[string]struct {
		reason string
		unset  string
		// serve is the function the process serves; Reconcile when empty.
		serve app.Function
		want  string
	}{
		"all set":             {reason: "a deployment with every setting starts"},
		"the API":             {reason: "the ProxyAPI reads none of them, and starts without", serve: app.ProxyAPI, unset: "PROXY_ENGINE_PUBLIC_URL"},
		"no public URL":       {reason: "a server could not install the engine", unset: "PROXY_ENGINE_PUBLIC_URL", want: "PROXY_ENGINE_PUBLIC_URL"},
		"no SHA-256":          {reason: "a server would not know which binary to install", unset: "PROXY_ENGINE_SHA256", want: "PROXY_ENGINE_SHA256"},
		"no status key":       {reason: "no credential of the status could be made", unset: "VM_STATUS_KEY_SECRET", want: "VM_STATUS_KEY_SECRET"},
		"no status addresses": {reason: "no server would let the control plane ask", unset: "VM_STATUS_SOURCE_RANGES", want: "VM_STATUS_SOURCE_RANGES"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			vars := maps.Clone(base)
			delete(vars, tc.unset)
			serve := cmp.Or(tc.serve, app.Reconcile)
			a, err := app.New(context.Background(), env(vars), app.Options{Serve: []app.Function{serve}})
			if a != nil {
				a.Close()
			}
			if (err == nil) != (tc.want == "") || err != nil && !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%s\nerror %v, want one naming %q", tc.reason, err, tc.want)
			}
		})
	}
}

// TestHetznerServersCarryTheStatusAccess: the composition root's own VM
// side makes a server's user-data with the status access of its uid,
// derived from the key of VM_STATUS_KEY_SECRET's version (read once, and
// never logged), and asks the server with the same key: a server of the
// fake that answers nothing is Provisioning.
func TestHetznerServersCarryTheStatusAccess(t *testing.T) {
	t.Setenv("FIRESTORE_EMULATOR_HOST", "127.0.0.1:1")
	t.Setenv("PUBSUB_EMULATOR_HOST", "127.0.0.1:1")
	const keyVersion = "projects/demo-x/secrets/egress-vm-status-key/versions/latest"
	keyText := base64.StdEncoding.EncodeToString([]byte(strings.Repeat("k", 32)))
	fake := hetznerfake.New(hetzner.LocalToken)
	t.Cleanup(fake.Close)
	var logs bytes.Buffer
	a, err := app.New(context.Background(), env(withVars(engineVars, map[string]string{"GOOGLE_CLOUD_PROJECT": "demo-x", "PROVIDERS": "hetzner",
		"HETZNER_ENDPOINT": fake.Endpoint(), "VM_STATUS_KEY_SECRET": keyVersion, "LOG_LEVEL": "debug"})),
		app.Options{Serve: []app.Function{app.Reconcile}, LogOutput: &logs})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	var reads []string
	app.SetReadSecret(a, func(_ context.Context, v string) (string, error) { reads = append(reads, v); return keyText, nil })
	ctx := context.Background()
	p, err := a.Providers.Get(ctx, hetzner.Type)
	if err != nil {
		t.Fatal(err)
	}
	id, err := p.Create(ctx, bootRequest("eu-central"))
	if err != nil {
		t.Fatal(err)
	}
	servers := fake.Servers()
	if len(servers) != 1 {
		t.Fatalf("%d servers, want 1", len(servers))
	}
	boot, err := cloudinit.Parse(fake.UserData(servers[0].ID))
	if err != nil {
		t.Fatal(err)
	}
	got, err := boot.Engine()
	if err != nil {
		t.Fatal(err)
	}
	key, _ := vmstatus.ParseKey(keyText)
	statusID := servers[0].Labels[vmside.LabelStatusID]
	if err := vmstatus.CheckStatusID(statusID); err != nil {
		t.Errorf("the server's status id label: %v", err)
	}
	if got.Status == nil || !vmconfig.Matches(got.Status.User.PasswordHash, key.Password(bootUID, statusID)) || !slices.Equal(got.Status.Sources, []string{"127.0.0.1/32"}) ||
		got.Status.SignKey != base64.RawURLEncoding.EncodeToString(key.SignKey(bootUID, statusID)) {
		t.Errorf("the server's status access %+v: want the key's credential and sign key of its uid and status id label, from 127.0.0.1/32 (the fake's default)", got.Status)
	}
	if boot.Setting(vmconfig.KeyEngineURL) != engineVars["PROXY_ENGINE_PUBLIC_URL"] {
		t.Errorf("the server installs the engine from %q, want PROXY_ENGINE_PUBLIC_URL", boot.Setting(vmconfig.KeyEngineURL))
	}
	fake.Settle()
	inst, err := p.Get(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if inst.State != provider.StateProvisioning {
		t.Errorf("a server whose proxy answers nothing is %s, want Provisioning", inst.State)
	}
	if len(reads) != 1 || reads[0] != keyVersion {
		t.Errorf("secret reads %v, want one of %s", reads, keyVersion)
	}
	if strings.Contains(logs.String(), keyText) || strings.Contains(logs.String(), key.Password(bootUID, statusID)) {
		t.Errorf("the function logged the key or a status password")
	}
}

// TestHetznerTokenComesFromSecretManager: the hetzner provider, made by
// the composition root behind the metering decorator, reads its token
// from the secret version HETZNER_TOKEN_SECRET names when first used
// (once), sends it on every call, and logs it nowhere; a read that fails
// makes no provider and says which variable, and is tried again on the
// next use.
func TestHetznerTokenComesFromSecretManager(t *testing.T) {
	t.Setenv("FIRESTORE_EMULATOR_HOST", "127.0.0.1:1")
	t.Setenv("PUBSUB_EMULATOR_HOST", "127.0.0.1:1")
	const token, version = "a-token-only-the-secret-holds", "projects/demo-x/secrets/egress-hetzner-token/versions/latest"
	fake := hetznerfake.New(token)
	t.Cleanup(fake.Close)
	var logs bytes.Buffer
	a, err := app.New(context.Background(), env(map[string]string{"GOOGLE_CLOUD_PROJECT": "demo-x", "PROVIDERS": "hetzner",
		"HETZNER_TOKEN_SECRET": version, "HETZNER_ENDPOINT": fake.Endpoint(), "LOG_LEVEL": "debug",
		"PROXY_ENGINE_SHA256": engineVars["PROXY_ENGINE_SHA256"], "PROXY_ENGINE_PUBLIC_URL": engineVars["PROXY_ENGINE_PUBLIC_URL"],
		"PACING_SCALE": engineVars["PACING_SCALE"]}),
		app.Options{Serve: []app.Function{app.CollectGarbage}, VM: map[string]plugin.VMSide{hetzner.Type: vmSide}, LogOutput: &logs})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	var reads []string
	fail := true
	app.SetReadSecret(a, func(_ context.Context, v string) (string, error) {
		reads = append(reads, v)
		if fail {
			return "", errors.New("PermissionDenied")
		}
		return token, nil
	})
	ctx := context.Background()
	if _, err := a.Providers.Get(ctx, hetzner.Type); err == nil || !strings.Contains(err.Error(), "PermissionDenied") {
		t.Errorf("a provider whose token cannot be read: %v, want the read's error", err)
	}
	fail = false
	p, err := a.Providers.Get(ctx, hetzner.Type)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := provider.Unwrap(p).(*hetzner.Provider); !ok || p == provider.Unwrap(p) {
		t.Errorf("the registry hands out %T over %T, want the metering decorator over *hetzner.Provider", p, provider.Unwrap(p))
	}
	if _, err := p.ListByTag(ctx); err != nil {
		t.Fatalf("ListByTag with the secret's token: %v", err)
	}
	fake.SetRateLimit(3600, 0)
	p.ListByTag(ctx)
	if again, _ := a.Providers.Get(ctx, hetzner.Type); again != p {
		t.Error("a second use made another provider: the token is read once per process")
	}
	if len(reads) != 2 || reads[1] != version {
		t.Errorf("secret reads %v, want two of %s (the failed one and the one that made the provider)", reads, version)
	}
	if seen := fake.Tokens(); len(seen) != 1 || seen[token] == 0 {
		t.Errorf("the fake saw tokens %v, want only the secret's", seen)
	}
	if !strings.Contains(logs.String(), "rate limit") {
		t.Errorf("the provider's rate limit is not in the function's logs:\n%s", logs.String())
	}
	if strings.Contains(logs.String(), token) {
		t.Errorf("the function logged the token:\n%s", logs.String())
	}
}

// bootUID is the uid of bootRequest's proxy.
const bootUID = "3f2c1b0a-9e8d-4c7b-a6f5-e4d3c2b1a098"

// bootRequest is the create request of a proxy in region with the
// default bootstrap, as the reconciler makes it.
func bootRequest(region string) provider.CreateRequest {
	cfg := bootstrap.Config{Port: 3128, AllowedSourceRanges: []string{"203.0.113.0/24"}, Generation: 1,
		Credentials: proxy.Credentials{Username: "tenant", Password: "Tenantpassword0123456789"}}
	engine, _ := bootstrap.EngineConfig(cfg)
	script, _ := bootstrap.Render(cfg)
	return provider.CreateRequest{Name: "proxy-3f2c1b0a", UID: bootUID, Port: 3128, StartupScript: script, Engine: &engine,
		Placement: provider.Placement{Region: region}}
}
