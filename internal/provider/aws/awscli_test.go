package aws

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/internal/clock"
	"github.com/egress-proxies/egress/internal/gc"
	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/provider/aws/ec2fake"
	"github.com/egress-proxies/egress/internal/provider/vmside"
	"github.com/egress-proxies/egress/internal/proxy"
	"github.com/egress-proxies/egress/internal/store/storefake"
	"github.com/egress-proxies/egress/internal/testenv"
	"github.com/egress-proxies/egress/internal/vmstatus"
)

// cliInstances is what `aws ec2 describe-instances` prints, as far as
// the tests read it.
type cliInstances struct {
	Reservations []struct {
		Instances []struct {
			InstanceID      string `json:"InstanceId"`
			State           struct{ Name string }
			Placement       struct{ AvailabilityZone string }
			Tags            []struct{ Key, Value string }
			MetadataOptions struct {
				HTTPTokens              string `json:"HttpTokens"`
				HTTPPutResponseHopLimit int    `json:"HttpPutResponseHopLimit"`
			}
		}
	}
}

func (c cliInstances) byID() map[string]map[string]string {
	out := map[string]map[string]string{}
	for _, r := range c.Reservations {
		for _, in := range r.Instances {
			tags := map[string]string{}
			for _, t := range in.Tags {
				tags[t.Key] = t.Value
			}
			out[in.InstanceID] = tags
		}
	}
	return out
}

// TestAWSCLIAgainstTheFake holds the EC2 fake to a client the project
// did not write: AWS's own CLI (Debian's awscli), pointed at the fake
// with --endpoint-url, lists by tag filter (and page by page), reads
// what the provider made there, terminates an instance, lists Elastic
// IPs and launches an orphan with --tag-specifications. Each command's
// exit status is checked, and what it prints compared with what the
// provider reads; what the CLI does, the provider then sees.
func TestAWSCLIAgainstTheFake(t *testing.T) {
	cli := newAWSCLI(t)
	e := newEnv(t)
	cli.endpoint = e.fake.Endpoint()
	ctx := context.Background()

	ephemeral := request()
	static := request()
	static.UID, static.Name, static.ProxyName = "5c4b3a29-1807-4f6e-8d5c-4b3a29180706", provider.NameFromUID("5c4b3a29-1807-4f6e-8d5c-4b3a29180706"), "egress-2"
	static.StaticIP, static.Placement.Zone = true, "us-east-1c"
	ids := map[string]string{}
	for _, req := range []provider.CreateRequest{ephemeral, static} {
		id, err := e.p.Create(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		ids[req.Name] = parsedInstance(id)
	}
	e.fake.Settle()
	if _, err := e.p.Get(ctx, instanceID("us-east-1", ids[static.Name])); err != nil {
		t.Fatal(err) // associates the Elastic IP
	}
	foreign := e.fake.Put("us-east-1", "us-east-1a", map[string]string{"team": "other"})

	// The list by tag filter: the provider's two instances, with their
	// three tags, and not the other.
	var listed cliInstances
	cli.json(t, &listed, "ec2", "describe-instances", "--filters", "Name=tag:proxy-operator-managed,Values=true")
	got := listed.byID()
	want := map[string]map[string]string{}
	for _, req := range []provider.CreateRequest{ephemeral, static} {
		tags := map[string]string{provider.LabelManaged: "true", provider.LabelUID: req.UID, provider.LabelDeployment: "egress", "Name": req.Name, tagProbePort: "3128",
			vmside.LabelStatusID: vmstatus.StatusID(req)}
		if req.StaticIP {
			in := e.instance(t, instanceID("us-east-1", ids[req.Name]))
			tags[tagEIP], tags[tagEIPAddress] = in.Tags[tagEIP], in.Tags[tagEIPAddress]
		}
		want[ids[req.Name]] = tags
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("aws ec2 describe-instances --filters Name=tag:proxy-operator-managed,Values=true (-want +got):\n%s", diff)
	}
	for _, r := range listed.Reservations {
		for _, in := range r.Instances {
			if in.MetadataOptions.HTTPTokens != "required" || in.MetadataOptions.HTTPPutResponseHopLimit != 1 {
				t.Errorf("the CLI reads %s's metadata options as %+v, want IMDSv2 required with a hop limit of 1", in.InstanceID, in.MetadataOptions)
			}
		}
	}

	// Every instance, page by page: the CLI follows nextToken.
	for range 4 {
		e.fake.Put("us-east-1", "us-east-1b", map[string]string{"team": "other"})
	}
	var all cliInstances
	cli.json(t, &all, "ec2", "describe-instances", "--page-size", "5")
	if n := len(all.byID()); n != 7 {
		t.Errorf("aws ec2 describe-instances --page-size 5 listed %d instances, want all 7", n)
	}
	if _, ok := all.byID()[foreign]; !ok {
		t.Errorf("aws ec2 describe-instances without a filter does not list %s", foreign)
	}

	// The Static proxy's Elastic IP, on its instance.
	var addrs struct {
		Addresses []struct {
			AllocationID string `json:"AllocationId"`
			PublicIP     string `json:"PublicIp"`
			InstanceID   string `json:"InstanceId"`
			Tags         []struct{ Key, Value string }
		}
	}
	cli.json(t, &addrs, "ec2", "describe-addresses", "--filters", "Name=tag:proxy-operator-managed,Values=true")
	if len(addrs.Addresses) != 1 || addrs.Addresses[0].InstanceID != ids[static.Name] {
		t.Errorf("aws ec2 describe-addresses = %+v, want the Static proxy's one Elastic IP on %s", addrs.Addresses, ids[static.Name])
	} else if in, _ := e.p.Get(ctx, instanceID("us-east-1", ids[static.Name])); in == nil || in.IP != addrs.Addresses[0].PublicIP {
		t.Errorf("the provider reads the Static proxy's IP as %+v, the CLI as %s", in, addrs.Addresses[0].PublicIP)
	}

	// Debian's image, as the provider resolves it.
	var images struct {
		Images []struct{ ImageID, Name string } `json:"Images"`
	}
	cli.json(t, &images, "ec2", "describe-images", "--owners", DebianOwner, "--filters", "Name=name,Values=debian-13-amd64-*", "Name=architecture,Values=x86_64")
	resolved, err := e.p.resolveImage(ctx, "us-east-1", "debian-13")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(images.Images, func(im struct{ ImageID, Name string }) bool { return im.ImageID == resolved }) {
		t.Errorf("aws ec2 describe-images lists %+v, without the provider's %s", images.Images, resolved)
	}

	// terminate-instances: the provider then finds the instance gone.
	var term struct {
		TerminatingInstances []struct {
			InstanceID   string `json:"InstanceId"`
			CurrentState struct{ Name string }
		}
	}
	cli.json(t, &term, "ec2", "terminate-instances", "--instance-ids", ids[ephemeral.Name])
	if len(term.TerminatingInstances) != 1 || term.TerminatingInstances[0].CurrentState.Name != "shutting-down" {
		t.Errorf("aws ec2 terminate-instances printed %+v, want %s shutting-down", term, ids[ephemeral.Name])
	}
	if _, err := e.p.Get(ctx, instanceID("us-east-1", ids[ephemeral.Name])); !errors.Is(err, provider.ErrNotFound) {
		t.Errorf("Get after the CLI terminated it: %v, want not found", err)
	}

	// An orphan launched by the CLI with the tags, in another allowed
	// region: the provider lists it.
	orphan := cli.runInstance(t, e.fake, "eu-west-1", "0f0f0f0f-1111-4222-8333-444455556666", "egress")
	list, err := e.p.ListByTag(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(list, func(in provider.Instance) bool {
		return in.ID == instanceID("eu-west-1", orphan) && in.UID == "0f0f0f0f-1111-4222-8333-444455556666"
	}) {
		t.Errorf("ListByTag = %+v, without the CLI's orphan %s of eu-west-1", list, orphan)
	}
}

// TestTheCollectorTakesAnAWSCLIOrphan: an instance the CLI launched with
// this deployment's tags and a uid no document claims is an orphan; the
// collector keeps it through the grace period and then terminates it,
// and never one of another deployment launched the same way, nor the one
// a live document claims. A Static proxy's instance and Elastic IP whose
// document is gone go the same way, the address once its instance has.
func TestTheCollectorTakesAnAWSCLIOrphan(t *testing.T) {
	cli := newAWSCLI(t)
	clk := clock.NewFake(time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC))
	e := newEnv(t, func(c *Config, _ *ClientOptions) { c.Now = clk.Now })
	e.fake.SetClock(clk.Now)
	cli.endpoint = e.fake.Endpoint()
	ctx := context.Background()

	live := request()
	liveID, err := e.p.Create(ctx, live)
	if err != nil {
		t.Fatal(err)
	}
	store := storefake.New(clk)
	doc := &proxy.Proxy{Namespace: "team-a", Name: "egress-1", UID: live.UID, Spec: proxy.Spec{Provider: Type}}
	doc.Status.ProviderID = liveID
	if _, err := store.Create(ctx, doc, 10); err != nil {
		t.Fatal(err)
	}
	gone := request()
	gone.UID, gone.Name, gone.StaticIP, gone.Placement.Region = "0d0d0d0d-1111-4222-8333-444455556666", provider.NameFromUID("0d0d0d0d-1111-4222-8333-444455556666"), true, "eu-west-1"
	if _, err := e.p.Create(ctx, gone); err != nil {
		t.Fatal(err)
	}
	orphan := cli.runInstance(t, e.fake, "eu-west-1", "0f0f0f0f-1111-4222-8333-444455556666", "egress")
	other := cli.runInstance(t, e.fake, "us-east-1", "0e0e0e0e-1111-4222-8333-444455556666", "staging")
	e.fake.Settle()
	e.st.Set(gone.UID, vmside.Status{Ready: true, Generation: 1})
	if _, err := e.p.Get(ctx, instanceID("eu-west-1", e.instanceOf(t, gone.UID).ID)); err != nil {
		t.Fatal(err) // associates its Elastic IP
	}

	reg := provider.NewRegistry()
	if err := reg.Register(Type, func(context.Context) (provider.Provider, error) { return e.p, nil }); err != nil {
		t.Fatal(err)
	}
	c := gc.New(provider.NewSet(reg), store, nopRequeuer{}, clk, slog.New(slog.DiscardHandler), gc.Options{})
	run := func() gc.Summary {
		t.Helper()
		rep, err := c.Run(ctx)
		if err != nil || len(rep.Providers) != 1 {
			t.Fatalf("gc run: %+v, %v", rep, err)
		}
		e.fake.Settle()
		return rep.Providers[0]
	}
	young := run()
	if young.Deleted != 0 || young.TooYoung != 2 || young.Claimed != 1 {
		t.Errorf("a run within the grace period: %+v, want the two orphans kept as too young, one claimed (and the other deployment's not even listed)", young)
	}
	clk.Advance(gc.DefaultGracePeriod + time.Minute)
	old := run()
	if old.Deleted != 2 || old.Claimed != 1 {
		t.Errorf("a run past the grace period: %+v, want two deleted (the CLI's orphan, the gone Static proxy's instance), one claimed", old)
	}
	addr := run()
	if addr.Deleted != 1 {
		t.Errorf("the run after: %+v, want the gone Static proxy's Elastic IP released, now that its instance is gone", addr)
	}
	var running cliInstances
	cli.json(t, &running, "ec2", "describe-instances", "--filters", "Name=instance-state-name,Values=pending,running")
	cli.region = "eu-west-1"
	var euRunning cliInstances
	cli.json(t, &euRunning, "ec2", "describe-instances", "--filters", "Name=instance-state-name,Values=pending,running")
	left := slices.Sorted(func(yield func(string) bool) {
		for id := range running.byID() {
			yield(id)
		}
		for id := range euRunning.byID() {
			yield(id)
		}
	})
	if diff := cmp.Diff(slices.Sorted(slices.Values([]string{parsedInstance(liveID), other})), left); diff != "" {
		t.Errorf("instances running after the collector (-want +got):\n%s", diff)
	}
	if slices.Contains(left, orphan) {
		t.Errorf("the CLI's orphan %s still runs", orphan)
	}
	if n := len(e.fake.Addresses()); n != 0 {
		t.Errorf("%d Elastic IPs after the collector, want the gone proxy's released", n)
	}
}

// instanceOf is the fake's instance of a uid.
func (e *env) instanceOf(t *testing.T, uid string) ec2fake.Instance {
	t.Helper()
	for _, in := range e.fake.Instances() {
		if in.Tags[provider.LabelUID] == uid {
			return in
		}
	}
	t.Fatalf("no instance of uid %s", uid)
	return ec2fake.Instance{}
}

type nopRequeuer struct{}

func (nopRequeuer) Publish(context.Context, proxy.ReconcileMessage) error { return nil }

// awsCLI runs AWS's CLI against the fake, with a configuration of its
// own: no profile, no file of the machine's, dummy credentials for the
// CLI to sign with (the CLI needs some to sign; the provider is given
// its own in code and reads none from the environment).
type awsCLI struct {
	path, home, endpoint, region string
}

func newAWSCLI(t *testing.T) *awsCLI {
	t.Helper()
	// AWS CLI v2, Debian's awscli; AWS CLI v1 (pip's) or a version
	// manager's shim for a CLI that is not there skips the test.
	path := testenv.Require(t, testenv.AWSCLI)
	return &awsCLI{path: path, home: t.TempDir(), region: "us-east-1"}
}

// run runs aws and fails the test unless it exits 0; it returns what it
// printed. A generous bound keeps a hung command from holding the test;
// it is no measure.
func (a *awsCLI) run(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, a.path, append([]string{"--endpoint-url", a.endpoint, "--region", a.region, "--output", "json", "--no-cli-pager"}, args...)...)
	cmd.Env = append(os.Environ(),
		"AWS_ACCESS_KEY_ID=AKIAEGRESSFAKECLI001", "AWS_SECRET_ACCESS_KEY=not-a-secret",
		"AWS_CONFIG_FILE="+filepath.Join(a.home, "config"), "AWS_SHARED_CREDENTIALS_FILE="+filepath.Join(a.home, "credentials"),
		"HOME="+a.home, "AWS_EC2_METADATA_DISABLED=true", "AWS_PAGER=", "NO_PROXY=127.0.0.1", "no_proxy=127.0.0.1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("aws %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String()
}

func (a *awsCLI) json(t *testing.T, v any, args ...string) {
	t.Helper()
	out := a.run(t, args...)
	if err := json.Unmarshal([]byte(out), v); err != nil {
		t.Fatalf("aws %s printed no JSON: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// runInstance launches an instance with the CLI in region, tagged as
// the provider tags one (managed, uid, deployment), and returns its id.
func (a *awsCLI) runInstance(t *testing.T, f *ec2fake.Server, region, uid, deployment string) string {
	t.Helper()
	prev := a.region
	a.region = region
	defer func() { a.region = prev }()
	var out struct {
		Instances []struct {
			InstanceID string `json:"InstanceId"`
		}
	}
	a.json(t, &out, "ec2", "run-instances", "--image-id", f.ImageID(region, "debian-13-amd64-20251117-2299"), "--instance-type", "t3.micro", "--count", "1",
		"--tag-specifications", "ResourceType=instance,Tags=[{Key=proxy-operator-managed,Value=true},{Key=proxy-operator-uid,Value="+uid+"},{Key=egress-deployment,Value="+deployment+"}]")
	if len(out.Instances) != 1 {
		t.Fatalf("aws ec2 run-instances printed %+v, want one instance", out)
	}
	return out.Instances[0].InstanceID
}

// TestAWSCLIReadsTheDelegatedPrefix holds the fake's dual-stack launch to
// AWS's own CLI: it reads the zone's default subnet with its IPv6 block,
// the deployment's group, and the provider's instance with its interface
// in that subnet, its IPv6 address and the /80 the provider reports as
// status.ipv6Prefix; and an instance the CLI launches with
// --network-interfaces (Ipv6PrefixCount, Ipv6AddressCount, the group by
// id) gets a /80 of the subnet, which the CLI prints back.
func TestAWSCLIReadsTheDelegatedPrefix(t *testing.T) {
	cli := newAWSCLI(t)
	e := newEnv(t)
	cli.endpoint = e.fake.Endpoint()
	ctx := context.Background()
	block := e.fake.SetIPv6Subnet("us-east-1b")
	req := request()
	req.Placement.Zone, req.IPv6Prefix = "us-east-1b", true
	id, err := e.p.Create(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	in, err := e.p.Get(ctx, id)
	if err != nil {
		t.Fatal(err)
	}

	var subnets struct {
		Subnets []struct {
			SubnetID                    string `json:"SubnetId"`
			VpcID                       string `json:"VpcId"`
			Ipv6CidrBlockAssociationSet []struct {
				Ipv6CidrBlock      string
				Ipv6CidrBlockState struct{ State string }
			}
		}
	}
	cli.json(t, &subnets, "ec2", "describe-subnets", "--filters", "Name=availability-zone,Values=us-east-1b", "Name=default-for-az,Values=true")
	if len(subnets.Subnets) != 1 {
		t.Fatalf("aws ec2 describe-subnets printed %+v, want the zone's default subnet", subnets)
	}
	sn := subnets.Subnets[0]
	var groups struct {
		SecurityGroups []struct {
			GroupID string `json:"GroupId"`
			VpcID   string `json:"VpcId"`
		}
	}
	cli.json(t, &groups, "ec2", "describe-security-groups", "--group-names", "egress-proxy-egress")
	if len(groups.SecurityGroups) != 1 {
		t.Fatalf("aws ec2 describe-security-groups printed %+v, want the deployment's group", groups)
	}

	type iface struct {
		SubnetID      string `json:"SubnetId"`
		Ipv6Addresses []struct{ Ipv6Address string }
		Ipv6Prefixes  []struct{ Ipv6Prefix string }
	}
	describe := func(instance string) iface {
		var out struct {
			Reservations []struct {
				Instances []struct{ NetworkInterfaces []iface }
			}
		}
		cli.json(t, &out, "ec2", "describe-instances", "--instance-ids", instance)
		if len(out.Reservations) != 1 || len(out.Reservations[0].Instances) != 1 || len(out.Reservations[0].Instances[0].NetworkInterfaces) != 1 {
			t.Fatalf("aws ec2 describe-instances --instance-ids %s printed %+v, want one instance with one interface", instance, out)
		}
		return out.Reservations[0].Instances[0].NetworkInterfaces[0]
	}
	// What the CLI printed, in the shape of what the test expects of it.
	type seen struct {
		Block, BlockState, GroupVPC string
		Subnet                      string
		Addresses, Prefixes         int
		Prefix                      string
	}
	summary := func(ni iface) seen {
		s := seen{GroupVPC: groups.SecurityGroups[0].VpcID, Subnet: ni.SubnetID, Addresses: len(ni.Ipv6Addresses), Prefixes: len(ni.Ipv6Prefixes)}
		if len(sn.Ipv6CidrBlockAssociationSet) == 1 {
			s.Block, s.BlockState = sn.Ipv6CidrBlockAssociationSet[0].Ipv6CidrBlock, sn.Ipv6CidrBlockAssociationSet[0].Ipv6CidrBlockState.State
		}
		if len(ni.Ipv6Prefixes) == 1 {
			s.Prefix = ni.Ipv6Prefixes[0].Ipv6Prefix
		}
		return s
	}
	want := seen{Block: block, BlockState: "associated", GroupVPC: sn.VpcID, Subnet: sn.SubnetID, Addresses: 1, Prefixes: 1, Prefix: in.IPv6Prefix}
	if diff := cmp.Diff(want, summary(describe(parsedInstance(id)))); diff != "" {
		t.Errorf("the provider's instance as the CLI reads it (-want +got):\n%s", diff)
	}

	var run struct {
		Instances []struct {
			InstanceID string `json:"InstanceId"`
		}
	}
	spec, _ := json.Marshal([]map[string]any{{"DeviceIndex": 0, "SubnetId": sn.SubnetID, "Groups": []string{groups.SecurityGroups[0].GroupID},
		"Ipv6AddressCount": 1, "Ipv6PrefixCount": 1, "AssociatePublicIpAddress": true, "DeleteOnTermination": true}})
	cli.json(t, &run, "ec2", "run-instances", "--image-id", e.fake.ImageID("us-east-1", "debian-13-amd64-20251117-2299"), "--instance-type", "t3.micro", "--count", "1",
		"--network-interfaces", string(spec))
	if len(run.Instances) != 1 {
		t.Fatalf("aws ec2 run-instances --network-interfaces printed %+v, want one instance", run)
	}
	got := summary(describe(run.Instances[0].InstanceID))
	if !strings.HasSuffix(got.Prefix, "/80") || got.Prefix == in.IPv6Prefix {
		t.Errorf("the CLI's instance has prefix %q, want a /80 of its own", got.Prefix)
	}
	want.Prefix = got.Prefix
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the CLI's dual-stack instance as the CLI reads it (-want +got):\n%s", diff)
	}
}

// TestAWSCLIReadsTheElasticIPQuota: AWS's CLI reads the account's
// Elastic IP quota from the fake's DescribeAccountAttributes as the
// provider's Quotas does, beside the addresses the provider allocated.
func TestAWSCLIReadsTheElasticIPQuota(t *testing.T) {
	cli := newAWSCLI(t)
	e := newEnv(t)
	cli.endpoint = e.fake.Endpoint()
	e.fake.SetQuotas(ec2fake.Quotas{ElasticIPs: 3})
	req := request()
	req.StaticIP = true
	if _, err := e.p.Create(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	q, err := e.p.Quotas(context.Background(), "us-east-1")
	if err != nil {
		t.Fatal(err)
	}
	var attrs struct {
		AccountAttributes []struct {
			AttributeName   string
			AttributeValues []struct{ AttributeValue string }
		}
	}
	cli.json(t, &attrs, "ec2", "describe-account-attributes", "--attribute-names", "vpc-max-elastic-ips")
	var addrs struct {
		Addresses []struct {
			AllocationID string `json:"AllocationId"`
		}
	}
	cli.json(t, &addrs, "ec2", "describe-addresses")
	type read struct {
		Limit     string
		Addresses int
	}
	got := read{Addresses: len(addrs.Addresses)}
	if len(attrs.AccountAttributes) == 1 && len(attrs.AccountAttributes[0].AttributeValues) == 1 {
		got.Limit = attrs.AccountAttributes[0].AttributeValues[0].AttributeValue
	}
	if diff := cmp.Diff(read{Limit: "3", Addresses: 1}, got); diff != "" {
		t.Errorf("what the CLI reads (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(provider.Quota{Limit: 3, Usage: 1}, q.Addresses); diff != "" {
		t.Errorf("the provider's Quotas against what the CLI reads (-want +got):\n%s", diff)
	}
}
