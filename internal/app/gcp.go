package app

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	compute "cloud.google.com/go/compute/apiv1"
	"google.golang.org/api/option"

	"github.com/egress-proxies/egress/internal/bootstrap"
	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/provider/gcp"
	"github.com/egress-proxies/egress/internal/queue"
)

var (
	gcpNameRE  = regexp.MustCompile(`^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$`)
	gcpEmailRE = regexp.MustCompile(`^[^@\s]+@[^@\s]+\.[a-z]+$`)
	// probeTargetRE is the form the startup script accepts for its probe
	// target, checked here so a bad one stops the function at start-up
	// rather than every VM at boot.
	probeTargetRE = regexp.MustCompile(`^[A-Za-z0-9.-]+:[0-9]{1,5}$`)
)

// LoadGCPConfig reads the gcp provider's configuration:
//
//	GCP_PROJECT           where VMs are made (default GOOGLE_CLOUD_PROJECT)
//	GCP_NETWORK           the VPC network (default "default")
//	GCP_SUBNETWORK        the subnetwork in each region, for custom-mode networks
//	GCP_NETWORK_TAG       the tag the firewall rule opens (default "egress-proxy")
//	GCP_SERVICE_ACCOUNT   the VMs' own service account email (default none)
//	GCP_SCOPES            comma-separated OAuth scopes of that account
//	                      (default logging.write and monitoring.write)
//	GCP_PROBE_TARGET      the host:port a VM's self-test CONNECTs to through
//	                      its proxy (default www.google.com:443)
//	GCP_COMPUTE_ENDPOINT  a Compute API endpoint to use instead of Google's,
//	                      without credentials: for tests against a fake only
//
// The VMs call home on the reconcile topic of the functions' project.
func LoadGCPConfig(getenv Getenv, project string) (gcp.Config, string, error) {
	c := gcp.Config{
		Project:        envOr(getenv, "GCP_PROJECT", project),
		Network:        envOr(getenv, "GCP_NETWORK", gcp.DefaultNetwork),
		Subnetwork:     getenv("GCP_SUBNETWORK"),
		NetworkTag:     envOr(getenv, "GCP_NETWORK_TAG", gcp.DefaultNetworkTag),
		ServiceAccount: getenv("GCP_SERVICE_ACCOUNT"),
		Scopes:         splitList(getenv("GCP_SCOPES")),
		ProbeTarget:    envOr(getenv, "GCP_PROBE_TARGET", bootstrap.DefaultProbeTarget),
		CallHomeTopic:  "projects/" + project + "/topics/" + queue.ReconcileTopic,
	}
	if !probeTargetRE.MatchString(c.ProbeTarget) {
		return c, "", fmt.Errorf("config: GCP_PROBE_TARGET=%q is not host:port, such as www.google.com:443", c.ProbeTarget)
	}
	if len(c.Scopes) == 0 {
		c.Scopes = gcp.DefaultScopes
	}
	for name, v := range map[string]string{"GCP_NETWORK": c.Network, "GCP_NETWORK_TAG": c.NetworkTag} {
		if !gcpNameRE.MatchString(v) {
			return c, "", fmt.Errorf("config: %s=%q is not a GCE name: lowercase letters, digits and '-', at most 63", name, v)
		}
	}
	if c.Subnetwork != "" && !gcpNameRE.MatchString(c.Subnetwork) {
		return c, "", fmt.Errorf("config: GCP_SUBNETWORK=%q is not a GCE name", c.Subnetwork)
	}
	if c.ServiceAccount != "" && !gcpEmailRE.MatchString(c.ServiceAccount) {
		return c, "", fmt.Errorf("config: GCP_SERVICE_ACCOUNT=%q is not a service account email such as proxy-vm@PROJECT.iam.gserviceaccount.com", c.ServiceAccount)
	}
	for _, s := range c.Scopes {
		if !strings.HasPrefix(s, "https://www.googleapis.com/auth/") {
			return c, "", fmt.Errorf("config: GCP_SCOPES: %q is not an OAuth scope URL (https://www.googleapis.com/auth/…)", s)
		}
	}
	return c, getenv("GCP_COMPUTE_ENDPOINT"), nil
}

// gcpConstructor validates the configuration now, at start-up, and dials
// Compute when the provider is first used.
func (c Config) gcpConstructor(getenv Getenv) (provider.Constructor, error) {
	cfg, endpoint, err := LoadGCPConfig(getenv, c.Project)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context) (provider.Provider, error) {
		var opts []option.ClientOption
		if endpoint != "" {
			opts = append(opts, option.WithEndpoint(endpoint), option.WithoutAuthentication())
		}
		client, err := compute.NewInstancesRESTClient(context.WithoutCancel(ctx), opts...)
		if err != nil {
			return nil, fmt.Errorf("compute client: %w", err)
		}
		return gcp.New(client, cfg)
	}, nil
}

func envOr(getenv Getenv, name, def string) string {
	if v := getenv(name); v != "" {
		return v
	}
	return def
}
