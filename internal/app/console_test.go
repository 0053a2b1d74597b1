package app_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/egress-proxies/egress/internal/app"
)

// TestConsoleWithoutIAP: with IAP_AUDIENCE unset and no local identity (a
// deployment without console_enabled) the console is still mounted, and
// a browser, which sends no ID token, gets its 401 page saying the
// request carries no identity: what the configuration reference says of
// IAP_AUDIENCE unset.
func TestConsoleWithoutIAP(t *testing.T) {
	t.Setenv("FIRESTORE_EMULATOR_HOST", "127.0.0.1:1")
	a, err := app.New(context.Background(), env(map[string]string{"GOOGLE_CLOUD_PROJECT": "demo-x"}), app.Options{Serve: []app.Function{app.ProxyAPI}})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	w := httptest.NewRecorder()
	a.ProxyAPI().ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/console/", nil))
	if w.Code != http.StatusUnauthorized || !strings.Contains(w.Body.String(), "Not available") {
		t.Errorf("GET /console/ without IAP nor a token: %d, want 401 and the console's page \"Not available\"\n%s", w.Code, w.Body.String())
	}
}
