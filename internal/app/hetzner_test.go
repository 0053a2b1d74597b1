package app_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/egress-proxies/egress/internal/app"
	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/provider/hetzner"
	"github.com/egress-proxies/egress/internal/provider/hetzner/hetznerfake"
)

// vmSide is the VM side's part of the hetzner provider, as doubles.
var vmSide = app.HetznerVM{
	Renderer: hetzner.RendererFunc(func(provider.CreateRequest) (string, error) { return "#cloud-config\n", nil }),
	Prober: hetzner.ProberFunc(func(context.Context, string, int32, string) (hetzner.Status, error) {
		return hetzner.Status{}, errors.New("no answer")
	}),
}

// TestHetznerWaitsForItsVMSide: until the VM side gives the provider a
// renderer of user-data and a prober of readiness, a configuration that
// enables hetzner stops at start-up, naming what is missing, rather than
// making servers that cannot boot the proxy or never become Ready.
func TestHetznerWaitsForItsVMSide(t *testing.T) {
	t.Setenv("FIRESTORE_EMULATOR_HOST", "127.0.0.1:1")
	t.Setenv("PUBSUB_EMULATOR_HOST", "127.0.0.1:1")
	getenv := env(map[string]string{"GOOGLE_CLOUD_PROJECT": "demo-x", "PROVIDERS": "gcp,hetzner",
		"HETZNER_TOKEN_SECRET": "projects/demo-x/secrets/egress-hetzner-token/versions/latest"})
	cases := map[string]struct {
		vm   app.HetznerVM
		want string
	}{
		"Neither":    {want: "no renderer of the servers' user-data (hetzner.Renderer) and no prober of their readiness (hetzner.Prober)"},
		"NoProber":   {vm: app.HetznerVM{Renderer: vmSide.Renderer}, want: "no prober of their readiness (hetzner.Prober)"},
		"NoRenderer": {vm: app.HetznerVM{Prober: vmSide.Prober}, want: "no renderer of the servers' user-data (hetzner.Renderer)"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := app.New(context.Background(), getenv, app.Options{Serve: []app.Function{app.Reconcile}, HetznerVM: tc.vm})
			want := `config: PROVIDERS names "hetzner", but this build has ` + tc.want + `: the VM side of the hetzner provider (its cloud-init bootstrap and its readiness) is not built yet, so a server could neither boot the proxy nor be seen serving (docs/operations/hetzner.md)`
			if err == nil || err.Error() != want {
				t.Errorf("error %v\nwant  %s", err, want)
			}
		})
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
		"HETZNER_TOKEN_SECRET": version, "HETZNER_ENDPOINT": fake.Endpoint(), "LOG_LEVEL": "debug"}),
		app.Options{Serve: []app.Function{app.CollectGarbage}, HetznerVM: vmSide, LogOutput: &logs})
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
