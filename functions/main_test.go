package functions

import (
	"context"
	"errors"
	"os"
	"testing"

	"github.com/egress-proxies/egress/emulators/emulatortest"
	"github.com/egress-proxies/egress/internal/app"
	"github.com/egress-proxies/egress/internal/provider/mock"
	"github.com/egress-proxies/egress/internal/provider/plugin"
)

func TestMain(m *testing.M) { emulatortest.Main(m) }

// useApp builds an App of the test's own, on a project of its own, with
// env over the process environment (where the emulators' hosts are), and
// makes it the one the entry points serve until the test ends.
func useApp(t *testing.T, env map[string]string) *app.App {
	t.Helper()
	emulatortest.Firestore(t)
	emulatortest.PubSub(t)
	vars := map[string]string{"GOOGLE_CLOUD_PROJECT": emulatortest.ProjectID(t), "PROVIDERS": "mock", "MOCK_PROVISIONING_DELAY": "1s"}
	for k, v := range env {
		vars[k] = v
	}
	getenv := func(k string) string {
		if v, ok := vars[k]; ok {
			return v
		}
		return os.Getenv(k)
	}
	a, err := app.New(context.Background(), getenv, app.Options{Linked: []plugin.Plugin{mock.Plugin}})
	if err != nil {
		t.Fatal(err)
	}
	process.mu.Lock()
	process.app = a
	process.mu.Unlock()
	t.Cleanup(func() {
		process.mu.Lock()
		process.app = nil
		process.mu.Unlock()
		a.Close()
	})
	return a
}

// TestFailedBuildIsRetried: a process whose App could not be built tries
// again on the next request rather than keeping the error until it is
// recycled, and keeps the App once one is built.
func TestFailedBuildIsRetried(t *testing.T) {
	builds := 0
	built := &app.App{}
	h := &appHolder{build: func(context.Context) (*app.App, error) {
		builds++
		if builds == 1 {
			return nil, errors.New("firestore client: no credentials")
		}
		return built, nil
	}}
	if _, err := h.get(context.Background()); err == nil {
		t.Fatal("the first build failed, but get returned no error")
	}
	for range 2 {
		a, err := h.get(context.Background())
		if err != nil || a != built {
			t.Fatalf("get after a failed build = %v, %v; want the App of the second build", a, err)
		}
	}
	if builds != 2 {
		t.Errorf("%d builds, want 2: one that failed, one that is kept", builds)
	}
}
