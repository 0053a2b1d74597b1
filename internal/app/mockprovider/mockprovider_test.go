package mockprovider_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/egress-proxies/egress/internal/app"
	"github.com/egress-proxies/egress/internal/app/mockprovider"
	"github.com/egress-proxies/egress/internal/provider/mock"
)

// TestTheNamesAgree: PROVIDERS names the mock by app.MockType, which the
// composition root keeps without linking the mock, and the registry by
// mock.Type: one name.
func TestTheNamesAgree(t *testing.T) {
	if mock.Type != app.MockType || mockprovider.Linked().Type != app.MockType {
		t.Errorf("mock.Type %q, app.MockType %q, Linked().Type %q: want one name", mock.Type, app.MockType, mockprovider.Linked().Type)
	}
}

// TestOptionsFromTheConfiguration: the MOCK_ settings reach the mock's
// options.
func TestOptionsFromTheConfiguration(t *testing.T) {
	c := app.MockConfig{Deployment: "staging", ProvisioningDelay: 2 * time.Second, ReconfigureDelay: time.Second}
	want := mock.Options{Deployment: "staging", ProvisioningDelay: 2 * time.Second, ReconfigureDelay: time.Second}
	got := mockprovider.Options(c)
	if got.Clock == nil {
		t.Error("Options gave no clock: the mock's VMs would never boot")
	}
	if diff := cmp.Diff(want, got, cmpopts.IgnoreFields(mock.Options{}, "Clock")); diff != "" {
		t.Errorf("options (-want +got):\n%s", diff)
	}
}
