package app_test

import (
	"context"
	"strings"
	"testing"

	"github.com/egress-proxies/egress/internal/app"
)

// TestLocalIdentityStopsACloudRunStart: LOCAL_IDENTITY makes every
// request without a token an admin's; on Cloud Run (K_SERVICE is set on
// every service it runs) a configured one stops the function at start-up,
// naming both, instead of serving anyone who strips their token.
func TestLocalIdentityStopsACloudRunStart(t *testing.T) {
	// The Firestore client then needs no credentials, and dials nothing
	// until a request uses it.
	t.Setenv("FIRESTORE_EMULATOR_HOST", "127.0.0.1:1")
	base := map[string]string{"GOOGLE_CLOUD_PROJECT": "demo-x"}
	cases := map[string]struct {
		reason  string
		env     map[string]string
		wantErr string
	}{
		"OnCloudRun": {reason: "a deployed function with a local identity", env: map[string]string{"K_SERVICE": "proxyapi", "LOCAL_IDENTITY": "me@example.com"},
			wantErr: `config: LOCAL_IDENTITY="me@example.com" is set on Cloud Run (K_SERVICE="proxyapi"): it would make every request without a token me@example.com's; unset it (only the local stack sets it)`},
		"CloudRunWithout": {reason: "a deployed function without one starts", env: map[string]string{"K_SERVICE": "proxyapi"}},
		"Locally":         {reason: "the local stack's identity, off Cloud Run", env: map[string]string{"LOCAL_IDENTITY": "me@example.com"}},
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
