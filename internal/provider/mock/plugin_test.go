package mock_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/egress-proxies/egress/internal/provider/mock"
	"github.com/egress-proxies/egress/internal/provider/plugin"
)

// TestOptionsFromTheSettings: the MOCK_ settings, as read, reach the
// mock's options, on a clock that runs.
func TestOptionsFromTheSettings(t *testing.T) {
	s := plugin.Settings{"MOCK_PROVISIONING_DELAY": "2s", "MOCK_RECONFIGURE_DELAY": "1s"}
	want := mock.Options{Deployment: "staging", ProvisioningDelay: 2 * time.Second, ReconfigureDelay: time.Second}
	got := mock.OptionsOf(s, "staging")
	if got.Clock == nil {
		t.Error("OptionsOf gave no clock: the mock's VMs would never boot")
	}
	if diff := cmp.Diff(want, got, cmpopts.IgnoreFields(mock.Options{}, "Clock")); diff != "" {
		t.Errorf("options (-want +got):\n%s", diff)
	}
}
