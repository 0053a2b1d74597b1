package app_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/internal/app"
)

func env(m map[string]string) app.Getenv { return func(k string) string { return m[k] } }

func TestLoadConfigAndRegistry(t *testing.T) {
	cases := map[string]struct {
		reason  string
		env     map[string]string
		want    app.Config
		wantErr string
	}{
		"Defaults": {
			reason: "only the project is required; the mock is the default provider",
			env:    map[string]string{"GOOGLE_CLOUD_PROJECT": "demo-x"},
			want:   app.Config{Project: "demo-x", Providers: []string{"mock"}, DefaultProvider: "mock", MockProvisioningDelay: 5 * time.Second},
		},
		"NoProject": {
			reason:  "the project is named in the error",
			env:     map[string]string{},
			wantErr: "config: GOOGLE_CLOUD_PROJECT is not set: set it to the project id (a demo-… id for the emulators)",
		},
		"BadDuration": {
			reason:  "a duration that does not parse names the variable and the syntax",
			env:     map[string]string{"GOOGLE_CLOUD_PROJECT": "demo-x", "MOCK_PROVISIONING_DELAY": "5 seconds"},
			wantErr: `config: MOCK_PROVISIONING_DELAY="5 seconds" is not a duration: want Go's syntax, such as 2s or 10m`,
		},
		"UnknownProvider": {
			reason:  "a provider this build lacks is refused at start-up",
			env:     map[string]string{"GOOGLE_CLOUD_PROJECT": "demo-x", "PROVIDERS": "mock,aws"},
			wantErr: `config: PROVIDERS names "aws", which this build does not have (known: gcp, mock)`,
		},
		"GCPEnabled": {
			reason: "gcp with its defaults: the project falls back to GOOGLE_CLOUD_PROJECT",
			env:    map[string]string{"GOOGLE_CLOUD_PROJECT": "demo-x", "PROVIDERS": "gcp,mock"},
			want:   app.Config{Project: "demo-x", Providers: []string{"gcp", "mock"}, DefaultProvider: "gcp", MockProvisioningDelay: 5 * time.Second},
		},
		"GCPBadTag": {
			reason:  "a gcp setting that cannot work stops the start, naming the variable",
			env:     map[string]string{"GOOGLE_CLOUD_PROJECT": "demo-x", "PROVIDERS": "gcp", "GCP_NETWORK_TAG": "Egress Proxy"},
			wantErr: `config: GCP_NETWORK_TAG="Egress Proxy" is not a GCE name: lowercase letters, digits and '-', at most 63`,
		},
		"GCPBadServiceAccount": {
			reason:  "the VMs' service account must be an email",
			env:     map[string]string{"GOOGLE_CLOUD_PROJECT": "demo-x", "PROVIDERS": "gcp", "GCP_SERVICE_ACCOUNT": "proxy-vm"},
			wantErr: `config: GCP_SERVICE_ACCOUNT="proxy-vm" is not a service account email such as proxy-vm@PROJECT.iam.gserviceaccount.com`,
		},
		"GCPSettingsIgnoredWhenDisabled": {
			reason: "GCP_* settings are not read when gcp is not enabled",
			env:    map[string]string{"GOOGLE_CLOUD_PROJECT": "demo-x", "GCP_NETWORK_TAG": "Egress Proxy"},
			want:   app.Config{Project: "demo-x", Providers: []string{"mock"}, DefaultProvider: "mock", MockProvisioningDelay: 5 * time.Second},
		},
		"DefaultNotEnabled": {
			reason:  "the default provider must be enabled",
			env:     map[string]string{"GOOGLE_CLOUD_PROJECT": "demo-x", "DEFAULT_PROVIDER": "gcp"},
			wantErr: `config: DEFAULT_PROVIDER "gcp" is not among PROVIDERS (mock)`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			cfg, err := app.LoadConfig(env(tc.env))
			if err == nil {
				_, err = cfg.Registry(env(tc.env))
			}
			gotErr := ""
			if err != nil {
				gotErr = err.Error()
			}
			if diff := cmp.Diff(tc.wantErr, gotErr); diff != "" {
				t.Fatalf("%s\nerror (-want +got):\n%s", tc.reason, diff)
			}
			if err == nil {
				if diff := cmp.Diff(tc.want, cfg); diff != "" {
					t.Errorf("%s\nconfig (-want +got):\n%s", tc.reason, diff)
				}
			}
		})
	}
}
