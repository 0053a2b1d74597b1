package app_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/egress-proxies/egress/internal/app"
	"github.com/egress-proxies/egress/internal/clouds"
	"github.com/egress-proxies/egress/internal/provider/mock"
	"github.com/egress-proxies/egress/internal/provider/plugin"
)

// TestLocalIdentityStopsACloudRunStart: LOCAL_IDENTITY makes every
// request without a token an admin's; on Cloud Run (K_SERVICE is set on
// every service it runs) a configured one stops the function at start-up,
// naming both, instead of serving anyone who strips their token.
func TestLocalIdentityStopsACloudRunStart(t *testing.T) {
	const kmsKey = "projects/demo-x/locations/us-central1/keyRings/egress-egress/cryptoKeys/proxy-credentials"
	// The Firestore client then needs no credentials, and dials nothing
	// until a request uses it.
	t.Setenv("FIRESTORE_EMULATOR_HOST", "127.0.0.1:1")
	base := map[string]string{"GOOGLE_CLOUD_PROJECT": "demo-x"}
	cases := map[string]struct {
		reason  string
		env     map[string]string
		wantErr string
	}{
		"OnCloudRun": {reason: "a deployed function with a local identity", env: map[string]string{"K_SERVICE": "proxyapi", "LOCAL_IDENTITY": "me@example.com", "CREDENTIALS_KEY": kmsKey},
			wantErr: `config: LOCAL_IDENTITY="me@example.com" is set on Cloud Run (K_SERVICE="proxyapi"): it would make every request without a token me@example.com's; unset it (only the local stack sets it)`},
		"CloudRunWithout": {reason: "a deployed function without one starts", env: map[string]string{"K_SERVICE": "proxyapi", "CREDENTIALS_KEY": kmsKey}},
		"CloudRunLocalKey": {reason: "the local key is in the source: a deployed function refuses it", env: map[string]string{"K_SERVICE": "proxyapi"},
			wantErr: `config: CREDENTIALS_KEY=local is set on Cloud Run (K_SERVICE="proxyapi"): the local key is no secret; set it to the deployment's Cloud KMS key (Terraform does)`},
		"Locally": {reason: "the local stack's identity, off Cloud Run", env: map[string]string{"LOCAL_IDENTITY": "me@example.com"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			m := map[string]string{}
			for k, v := range base {
				m[k] = v
			}
			for k, v := range tc.env {
				m[k] = v
			}
			a, err := app.New(context.Background(), env(m), app.Options{Serve: []app.Function{app.ProxyAPI}})
			gotErr := ""
			if err != nil {
				gotErr = err.Error()
			} else {
				a.Close()
			}
			if gotErr != tc.wantErr {
				t.Errorf("%s\nerror %q\nwant  %q", tc.reason, gotErr, tc.wantErr)
			}
			if tc.wantErr == "" && strings.Contains(gotErr, "LOCAL_IDENTITY") {
				t.Errorf("%s\nrefused: %s", tc.reason, gotErr)
			}
		})
	}
}

// TestTheMockIsLinkedOnlyWhereAsked: the deployed functions do not link the
// mock provider, so a configuration naming it stops the start-up, naming
// the variable and why; a binary that links it (the local stack, tests)
// starts with it.
func TestTheMockIsLinkedOnlyWhereAsked(t *testing.T) {
	t.Setenv("FIRESTORE_EMULATOR_HOST", "127.0.0.1:1")
	t.Setenv("PUBSUB_EMULATOR_HOST", "127.0.0.1:1")
	getenv := env(map[string]string{"GOOGLE_CLOUD_PROJECT": "demo-x", "PROVIDERS": "mock"})
	serve := []app.Function{app.Reconcile}
	_, err := app.New(context.Background(), getenv, app.Options{Serve: serve})
	served := typesOf(clouds.All)
	want := `config: PROVIDERS names "mock", which this binary does not link: the mock is the local stack's and the tests' only, and the deployed functions serve ` +
		strings.Join(served[:len(served)-1], ", ") + " and " + served[len(served)-1]
	if err == nil || err.Error() != want {
		t.Errorf("without the mock linked:\nerror %v\nwant  %s", err, want)
	}
	a, err := app.New(context.Background(), getenv, app.Options{Serve: serve, Linked: []plugin.Plugin{mock.Plugin}})
	if err != nil {
		t.Fatalf("with the mock linked: %v", err)
	}
	defer a.Close()
	if got := a.Providers.Types(); !slices.Equal(got, []string{"mock"}) {
		t.Errorf("providers %v, want [mock]", got)
	}
}
