package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/egress-proxies/egress/internal/client"
	"github.com/egress-proxies/egress/internal/proxy"
)

// updateCommand changes a proxy's source ranges, CONNECT ports, bandwidth
// limit, traffic quota, access log and IPv6 egress live; --wait waits until the VM serves the change.
func (c *cli) updateCommand(pf *proxyFlags) *cobra.Command {
	var (
		patch       client.SpecPatch
		bandwidth   string
		noBandwidth bool
		quota       string
		noQuota     bool
		accessLog   bool
		ipv6Egress  string
	)
	var cmd *cobra.Command
	cmd = c.onProxy(pf, "update NAME [--allowed-source-range CIDR…] [--connect-port PORT…|--default-connect-ports] [--bandwidth-limit RATE|--no-bandwidth-limit] [--traffic-quota BYTES|--no-traffic-quota] [--access-log=true|false] [--ipv6-egress MODE]",
		"Change a proxy's source ranges, CONNECT ports, bandwidth limit, traffic quota, access log or IPv6 egress on its VM, keeping its endpoint",
		func(ctx context.Context, ns, name string) (*proxy.Proxy, client.Condition, error) {
			switch {
			case noBandwidth:
				patch.BandwidthLimit = new(string)
			case cmd.Flags().Changed("bandwidth-limit"):
				patch.BandwidthLimit = &bandwidth
			}
			switch {
			case noQuota:
				patch.TrafficQuota = new(string)
			case cmd.Flags().Changed("traffic-quota"):
				patch.TrafficQuota = &quota
			}
			if cmd.Flags().Changed("access-log") {
				patch.AccessLog = &accessLog
			}
			if cmd.Flags().Changed("ipv6-egress") {
				m := proxy.IPv6Egress(ipv6Egress)
				patch.IPv6Egress = &m
			}
			p, err := c.client.UpdateProxy(ctx, ns, name, patch)
			if err != nil {
				return nil, nil, err
			}
			return p, client.Reconfigured(p.Generation), nil
		})
	cmd.Example = `  egress proxies update partner-api -n payments --allowed-source-range 203.0.113.0/24,198.51.100.0/24 --wait
  egress proxies update partner-api -n payments --connect-port 443 --connect-port 8443
  egress proxies update scraper -n data --bandwidth-limit 50Mbit --access-log=false
  egress proxies update scraper -n data --ipv6-egress perConnection
  egress proxies update scraper -n data --traffic-quota 500GB`
	f := cmd.Flags()
	f.StringSliceVar(&patch.AllowedSourceRanges, "allowed-source-range", nil, "a CIDR that may use the proxy; the list replaces the proxy's (repeat, or separate with commas)")
	f.Int32SliceVar(&patch.ConnectPorts, "connect-port", nil, "a port CONNECT may reach; the list replaces the proxy's (repeat)")
	f.BoolVar(&patch.DefaultConnectPorts, "default-connect-ports", false, "back to the default CONNECT ports, 443 and 80")
	f.StringVar(&bandwidth, "bandwidth-limit", "", "a bound on each direction of the proxy's traffic, e.g. 100Mbit (Kbit, Mbit or Gbit)")
	f.BoolVar(&noBandwidth, "no-bandwidth-limit", false, "remove the proxy's bandwidth limit")
	f.StringVar(&quota, "traffic-quota", "", trafficQuotaHelp)
	f.BoolVar(&noQuota, "no-traffic-quota", false, "remove the proxy's traffic quota")
	f.BoolVar(&accessLog, "access-log", true, "keep the proxy's access log (--access-log=false stops it)")
	f.StringVar(&ipv6Egress, "ipv6-egress", "", ipv6EgressHelp+"; \"\" goes back to the provider's default")
	cmd.MarkFlagsMutuallyExclusive("connect-port", "default-connect-ports")
	cmd.MarkFlagsMutuallyExclusive("bandwidth-limit", "no-bandwidth-limit")
	cmd.MarkFlagsMutuallyExclusive("traffic-quota", "no-traffic-quota")
	cmd.MarkFlagsOneRequired("allowed-source-range", "connect-port", "default-connect-ports", "bandwidth-limit", "no-bandwidth-limit", "access-log", "ipv6-egress")
	waitFlags(cmd, pf, "is Ready serving the change", 5*time.Minute)
	return cmd
}

// rotateCredentialsCommand gives a proxy new credentials on its VM.
func (c *cli) rotateCredentialsCommand(pf *proxyFlags) *cobra.Command {
	cmd := c.onProxy(pf, "rotate-credentials NAME", "Give a proxy a new username and password on its VM; the old password stops working",
		func(ctx context.Context, ns, name string) (*proxy.Proxy, client.Condition, error) {
			p, err := c.client.RotateCredentials(ctx, ns, name)
			if err != nil {
				return nil, nil, err
			}
			return p, client.Reconfigured(p.Generation), nil
		})
	waitFlags(cmd, pf, "is Ready serving the new credentials", 5*time.Minute)
	return cmd
}

// poolFlags are the flags of the pools commands.
type poolFlags struct {
	wait    bool
	timeout time.Duration
}

func (c *cli) poolsCommand() *cobra.Command {
	pf := &poolFlags{}
	cmd := group(&cobra.Command{
		Use:     "pools",
		Aliases: []string{"pool"},
		Short:   "Warm pools: VMs kept booted so a matching proxy is served in seconds (platform admins)",
	})
	cmd.AddCommand(c.poolPutCommand(), c.poolGetCommand(), c.poolListCommand(), c.poolDeleteCommand(pf))
	return cmd
}

func (c *cli) poolPutCommand() *cobra.Command {
	var spec proxy.PoolSpec
	cmd := &cobra.Command{
		Use:   "put POOL --region REGION [--zone ZONE] --size N [--claims-per-namespace-per-hour N]",
		Short: "Make a warm pool, or change its size and its bound of claims per namespace",
		Example: `  egress pools put eu-warm --region europe-west1 --zone europe-west1-b --size 5
  egress pools put eu-warm --region europe-west1 --zone europe-west1-b --size 5 --claims-per-namespace-per-hour 2`,
		Args: names(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			p, created, err := c.client.PutPool(cmd.Context(), args[0], spec)
			if err != nil {
				return err
			}
			if !created {
				fmt.Fprintf(c.stderr, "pool %s existed; its size is %d\n", args[0], p.Spec.Size)
			}
			return c.printPool(p)
		},
	}
	f := cmd.Flags()
	f.StringVar(&spec.Provider, "provider", "", "the cloud provider (default: the deployment's)")
	f.StringVar(&spec.Placement.Region, "region", "", "the region of its VMs (required)")
	f.StringVar(&spec.Placement.Zone, "zone", "", "a zone of the region; a proxy claims from the pool only with the same zone, or none")
	f.StringVar(&spec.Placement.MachineType, "machine-type", "", "the VMs' machine type (default: the provider's)")
	f.StringVar(&spec.Placement.Image, "image", "", "the VMs' image (default: the provider's)")
	f.IntVar(&spec.Size, "size", 0, "how many warm VMs to keep, 0-100 (required)")
	f.IntVar(&spec.ClaimsPerNamespacePerHour, "claims-per-namespace-per-hour", 0,
		"how many VMs one namespace's proxies may claim from the pool in any hour; past it they boot their own (default: no bound; a put without it lifts one)")
	_ = cmd.MarkFlagRequired("region")
	_ = cmd.MarkFlagRequired("size")
	return cmd
}

func (c *cli) poolGetCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "get POOL",
		Short: "Show a pool: its spec, and how many VMs are warm, booting and claimed",
		Args:  names(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := c.client.GetPool(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			return c.printPool(p)
		},
	}
}

func (c *cli) poolListCommand() *cobra.Command {
	return &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List the warm pools",
		Args:    names(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			list, err := c.client.AllPools(cmd.Context())
			if err != nil {
				return err
			}
			return c.printPools(list)
		},
	}
}

func (c *cli) poolDeleteCommand(pf *poolFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "delete POOL",
		Short: "Delete a pool and its unclaimed VMs; with --wait, until it is gone",
		Args:  names(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := c.client.DeletePool(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if !pf.wait {
				return c.printPool(p)
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), pf.timeout)
			defer cancel()
			if err := c.client.WaitPoolGone(ctx, args[0], pollInterval); err != nil {
				return err
			}
			fmt.Fprintf(c.stderr, "pool %s gone\n", args[0])
			return nil
		},
	}
	cmd.Flags().BoolVar(&pf.wait, "wait", false, "wait until the pool and its unclaimed VMs are gone")
	cmd.Flags().DurationVar(&pf.timeout, "timeout", 5*time.Minute, "how long --wait waits")
	return cmd
}
