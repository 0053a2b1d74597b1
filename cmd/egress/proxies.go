package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/egress-proxies/egress/internal/client"
	"github.com/egress-proxies/egress/internal/proxy"
)

// pollInterval is how often a wait reads the proxy.
const pollInterval = time.Second

// proxyFlags are the flags every proxies command shares.
type proxyFlags struct {
	namespace string
	wait      bool
	timeout   time.Duration
}

func (c *cli) proxiesCommand() *cobra.Command {
	pf := &proxyFlags{}
	cmd := group(&cobra.Command{
		Use:     "proxies",
		Aliases: []string{"proxy"},
		Short:   "Create, read, change, rotate and delete proxies",
	})
	cmd.PersistentFlags().StringVarP(&pf.namespace, "namespace", "n", c.getenv("EGRESS_NAMESPACE"), "the proxies' namespace (EGRESS_NAMESPACE)")
	cmd.AddCommand(c.createCommand(pf), c.getCommand(pf), c.listCommand(pf), c.deleteCommand(pf), c.rotateCommand(pf), c.waitCommand(pf),
		c.updateCommand(pf), c.rotateCredentialsCommand(pf))
	return cmd
}

func (pf *proxyFlags) ns() (string, error) {
	if pf.namespace == "" {
		return "", usageError{fmt.Errorf("no namespace: pass --namespace NS or set EGRESS_NAMESPACE")}
	}
	return pf.namespace, nil
}

// ipv6EgressHelp says the modes of --ipv6-egress.
const ipv6EgressHelp = "how connections to IPv6 destinations pick their source from the VM's IPv6 prefix: off, single (one address), perConnection (a fresh one each) or perSession (one per USER-session-ID); perConnection and perSession need a provider whose VMs get a prefix"

const trafficQuotaHelp = "a bound on the bytes the proxy carries in a calendar month (UTC), both directions together, enforced on the VM: a whole number and MB, GB, TB (SI) or MiB, GiB, TiB, e.g. 500GB; once spent, new connections get 403 quota-exceeded until the first of the next month"

func waitFlags(cmd *cobra.Command, pf *proxyFlags, what string, timeout time.Duration) {
	cmd.Flags().BoolVar(&pf.wait, "wait", false, "wait until the proxy "+what+", showing its progress")
	cmd.Flags().DurationVar(&pf.timeout, "timeout", timeout, "how long --wait waits")
}

func (c *cli) createCommand(pf *proxyFlags) *cobra.Command {
	var (
		spec          proxy.Spec
		ipPolicy      string
		cloudInitFile string
		accessLog     bool
	)
	cmd := &cobra.Command{
		Use:   "create NAME --region REGION --allowed-source-range CIDR [--allowed-source-range CIDR…]",
		Short: "Ask for a proxy; with --wait, until it is Ready",
		Long:  "Ask for a proxy; with --wait, until it is Ready.\n\n" + placementHelp(),
		Example: `  egress proxies create partner-api -n payments --region europe-west1 --allowed-source-range 203.0.113.0/24 --ip-policy Static --wait
  egress proxies create scraper -n data --region us-central1 --zone us-central1-b --allowed-source-range 198.51.100.7/32 --max-age 24h
  egress proxies create socks -n data --region us-central1 --allowed-source-range 198.51.100.7/32 --socks5-port 1080 --bandwidth-limit 100Mbit` + cloudExamples(),
		Args: names(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ns, err := pf.ns()
			if err != nil {
				return err
			}
			spec.IPPolicy = proxy.IPPolicy(ipPolicy)
			if cmd.Flags().Changed("access-log") {
				spec.AccessLog = &accessLog
			}
			if cloudInitFile != "" {
				b, err := os.ReadFile(cloudInitFile)
				if err != nil {
					return usageError{fmt.Errorf("--cloud-init-file: %w", err)}
				}
				spec.CloudInit = string(b)
			}
			p, created, err := c.client.CreateProxy(cmd.Context(), ns, args[0], spec)
			if err != nil {
				return err
			}
			if !created {
				fmt.Fprintf(c.stderr, "%s/%s exists already with this spec\n", ns, args[0])
			}
			if pf.wait {
				return c.wait(cmd.Context(), ns, args[0], pf.timeout, client.Ready)
			}
			return c.printProxy(p)
		},
	}
	f := cmd.Flags()
	f.StringVar(&spec.Placement.Region, "region", "", "the region the proxy's traffic leaves from (required), in the provider's words (this command's help says them)")
	f.StringVar(&spec.Placement.Zone, "zone", "", "a zone of the region, in the provider's words; without it the provider picks one, and another if it is full")
	f.StringSliceVar(&spec.AllowedSourceRanges, "allowed-source-range", nil, "a CIDR that may use the proxy, within what the platform's firewall lets in; repeat, or separate with commas (required)")
	f.StringVar(&ipPolicy, "ip-policy", "", "Ephemeral (each VM its own IP) or Static (one IP kept across the proxy's VMs, for a partner's allowlist) (default Ephemeral)")
	f.StringVar(&spec.MaxAge, "max-age", "", "rotate the VM (and its IP, unless Static) once it is this old, e.g. 24h")
	f.Int32Var(&spec.Port, "port", 0, "the proxy's port, one the platform's firewall opens (default 3128)")
	f.Int32SliceVar(&spec.ConnectPorts, "connect-port", nil, "a port CONNECT may reach; repeat (default 443 and 80)")
	f.Int32Var(&spec.Socks5Port, "socks5-port", 0, "a second port serving SOCKS5 with the same credentials, one the platform's firewall opens (default: no SOCKS5)")
	f.BoolVar(&spec.Socks5UDP, "socks5-udp", false, "carry SOCKS5 UDP ASSOCIATE too, on the SOCKS5 port's number over UDP (needs --socks5-port)")
	f.StringVar((*string)(&spec.IPv6Egress), "ipv6-egress", "", ipv6EgressHelp+" (default: single where the provider's VMs get an IPv6 prefix, off where not)")
	f.StringVar(&spec.BandwidthLimit, "bandwidth-limit", "", "a bound on each direction of the proxy's traffic: a whole number and Kbit, Mbit or Gbit, e.g. 100Mbit (default: none)")
	f.StringVar(&spec.TrafficQuota, "traffic-quota", "", trafficQuotaHelp+" (default: none)")
	f.BoolVar(&accessLog, "access-log", true, "keep one access line per connection and request (--access-log=false for tenants that must not)")
	f.StringVar(&spec.Provider, "provider", "", "the cloud provider, "+providerTypes()+" (default: the deployment's)")
	f.StringVar(&spec.Placement.MachineType, "machine-type", "", "the VM's machine type, in the provider's words (default: the provider's, "+defaultMachineTypes()+")")
	f.StringVar(&spec.Placement.Image, "image", "", "the VM's image (default: the provider's)")
	f.StringVar(&spec.CloudInitSecret, "cloud-init-secret", "", "a Secret Manager version with your own cloud-init, if the deployment allows it")
	f.StringVar(&cloudInitFile, "cloud-init-file", "", "a file with your own cloud-init, if the deployment allows it")
	waitFlags(cmd, pf, "is Ready", 10*time.Minute)
	_ = cmd.RegisterFlagCompletionFunc("ipv6-egress", cobra.FixedCompletions(ipv6Modes(), cobra.ShellCompDirectiveNoFileComp))
	_ = cmd.RegisterFlagCompletionFunc("ip-policy", cobra.FixedCompletions([]string{string(proxy.IPEphemeral), string(proxy.IPStatic)}, cobra.ShellCompDirectiveNoFileComp))
	c.deprecatedAlias(f, "allow", "allowed-source-range")
	c.deprecatedSwitch(f, "static", "ip-policy", string(proxy.IPStatic))
	// The API checks every rule and names each broken one; the CLI only
	// says what it cannot do without.
	_ = cmd.MarkFlagRequired("region")
	_ = cmd.MarkFlagRequired("allowed-source-range")
	return cmd
}

// onProxy is a command on one proxy: call does it and says, for --wait,
// what to wait for (nil: the command has no --wait).
func (c *cli) onProxy(pf *proxyFlags, use, short string, call func(ctx context.Context, ns, name string) (*proxy.Proxy, client.Condition, error)) *cobra.Command {
	return &cobra.Command{
		Use:   use,
		Short: short,
		Args:  names(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ns, err := pf.ns()
			if err != nil {
				return err
			}
			p, until, err := call(cmd.Context(), ns, args[0])
			if err != nil {
				return err
			}
			if pf.wait && until != nil {
				return c.wait(cmd.Context(), ns, args[0], pf.timeout, until)
			}
			return c.printProxy(p)
		},
	}
}

func (c *cli) getCommand(pf *proxyFlags) *cobra.Command {
	return c.onProxy(pf, "get NAME", "Show a proxy, with its proxyURL if you are a member of its namespace",
		func(ctx context.Context, ns, name string) (*proxy.Proxy, client.Condition, error) {
			p, err := c.client.GetProxy(ctx, ns, name)
			return p, nil, err
		})
}

func (c *cli) listCommand(pf *proxyFlags) *cobra.Command {
	return &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List a namespace's proxies",
		Args:    names(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			ns, err := pf.ns()
			if err != nil {
				return err
			}
			list, err := c.client.AllProxies(cmd.Context(), ns)
			if err != nil {
				return err
			}
			return c.printProxies(list)
		},
	}
}

func (c *cli) deleteCommand(pf *proxyFlags) *cobra.Command {
	cmd := c.onProxy(pf, "delete NAME", "Delete a proxy and its VM; with --wait, until both are gone",
		func(ctx context.Context, ns, name string) (*proxy.Proxy, client.Condition, error) {
			p, err := c.client.DeleteProxy(ctx, ns, name)
			return p, client.Gone, err
		})
	waitFlags(cmd, pf, "and its VM are gone", 5*time.Minute)
	return cmd
}

func (c *cli) rotateCommand(pf *proxyFlags) *cobra.Command {
	cmd := c.onProxy(pf, "rotate NAME", "Give a proxy a new VM, and a new IP unless it is static; the credentials stay",
		func(ctx context.Context, ns, name string) (*proxy.Proxy, client.Condition, error) {
			before, err := c.client.GetProxy(ctx, ns, name)
			if err != nil {
				return nil, nil, err
			}
			p, err := c.client.RotateProxy(ctx, ns, name)
			return p, client.Rotated(before.Status.Rotations), err
		})
	waitFlags(cmd, pf, "is Ready on its new VM", 10*time.Minute)
	return cmd
}

func (c *cli) waitCommand(pf *proxyFlags) *cobra.Command {
	var condition string
	cmd := &cobra.Command{
		Use:   "wait NAME --for Ready|Deleted",
		Short: "Wait until a proxy is Ready (exit 1 if it fails) or deleted",
		Args:  names(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ns, err := pf.ns()
			if err != nil {
				return err
			}
			until, ok := map[string]client.Condition{"Ready": client.Ready, "Deleted": client.Gone}[condition]
			if !ok {
				return usageError{fmt.Errorf("--for %q: want Ready or Deleted", condition)}
			}
			return c.wait(cmd.Context(), ns, args[0], pf.timeout, until)
		},
	}
	cmd.Flags().StringVar(&condition, "for", "Ready", "what to wait for: Ready or Deleted")
	cmd.Flags().DurationVar(&pf.timeout, "timeout", 10*time.Minute, "how long to wait")
	_ = cmd.RegisterFlagCompletionFunc("for", cobra.FixedCompletions([]string{"Ready", "Deleted"}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

// wait waits for the proxy, printing each change of phase or message on
// standard error as it happens, and the proxy as it ends on standard
// output (nothing once it is gone).
func (c *cli) wait(ctx context.Context, ns, name string, timeout time.Duration, until client.Condition) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	start := time.Now()
	p, err := c.client.Wait(ctx, ns, name, pollInterval, until, func(p *proxy.Proxy) {
		fmt.Fprintf(c.stderr, "%6.1fs  %s\n", time.Since(start).Seconds(), progressLine(p))
	})
	if err != nil {
		return err
	}
	if p == nil {
		return nil
	}
	return c.printProxy(p)
}

func progressLine(p *proxy.Proxy) string {
	if p == nil {
		return "gone"
	}
	if msg := client.Message(p); msg != "" {
		return fmt.Sprintf("%s: %s", p.Status.Phase, msg)
	}
	return string(p.Status.Phase)
}

// names checks a command's count of positional arguments.
func names(n int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != n {
			return fmt.Errorf("%s takes %d argument(s), got %d: usage: %s", cmd.CommandPath(), n, len(args), cmd.UseLine())
		}
		return nil
	}
}

// ipv6Modes are the values of --ipv6-egress.
func ipv6Modes() []string {
	out := make([]string, len(proxy.IPv6Egresses))
	for i, m := range proxy.IPv6Egresses {
		out[i] = string(m)
	}
	return out
}
