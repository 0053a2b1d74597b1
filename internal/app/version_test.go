package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/internal/app"
	"github.com/egress-proxies/egress/internal/version/versiontest"
)

// TestStartLineSaysTheVersion: each function's first line says the
// release it runs, as CHANGELOG.md names it, and which functions the
// process serves, so a log reader can tell which release made the lines
// after it.
func TestStartLineSaysTheVersion(t *testing.T) {
	t.Setenv("FIRESTORE_EMULATOR_HOST", "127.0.0.1:1")
	var logs bytes.Buffer
	a, err := app.New(context.Background(), env(map[string]string{"GOOGLE_CLOUD_PROJECT": "demo-x"}),
		app.Options{Serve: []app.Function{app.ProxyAPI}, LogOutput: &logs})
	if err != nil {
		t.Fatal(err)
	}
	a.Close()
	first, _, _ := strings.Cut(logs.String(), "\n")
	var got struct {
		Message   string   `json:"message"`
		Version   string   `json:"version"`
		Functions []string `json:"functions"`
	}
	if err := json.Unmarshal([]byte(first), &got); err != nil {
		t.Fatalf("the first log line %q: %v", first, err)
	}
	want := got
	want.Message, want.Version, want.Functions = app.StartMessage, versiontest.Changelog(t), []string{string(app.ProxyAPI)}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the first log line (-want +got):\n%s", diff)
	}
}
