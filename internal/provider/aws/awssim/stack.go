package awssim

import (
	"encoding/json"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/uuid"

	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/provider/aws"
	"github.com/egress-proxies/egress/internal/provider/aws/ec2fake"
	"github.com/egress-proxies/egress/internal/provider/providerstack"
	"github.com/egress-proxies/egress/internal/testenv"
)

// Stack is AWS's part of the local stack's end-to-end test: the EC2
// fake (startEC2), which the stack's aws provider is pointed at
// (AWS_EC2_ENDPOINT), in the one region the stack allows, and issue 35's
// flow over it (TestEndToEnd/Flows/AWS), checked with AWS's CLI.
var Stack = providerstack.New(aws.Type, "AWS", startEC2, flow)

// awsRegion is the region of the stack's aws proxies (AWS_ALLOWED_REGIONS).
const awsRegion = "eu-west-1"

// awsCLI is AWS's own CLI (Debian's awscli) against the stack's EC2 fake.
type awsCLI struct{ path, endpoint, home string }

// run runs aws in awsRegion and fails the test unless it exits 0.
func (a awsCLI) run(t *testing.T, args ...string) string {
	t.Helper()
	// A key of no account: the fake reads the signature's scope only.
	return providerstack.RunTool(t, a.path, append([]string{"--endpoint-url", a.endpoint, "--region", awsRegion, "--output", "json", "--no-cli-pager"}, args...),
		"AWS_ACCESS_KEY_ID=AKIAEGRESSLOCALSTACK1", "AWS_SECRET_ACCESS_KEY=not-a-secret",
		"AWS_CONFIG_FILE="+filepath.Join(a.home, "config"), "AWS_SHARED_CREDENTIALS_FILE="+filepath.Join(a.home, "credentials"),
		"HOME="+a.home, "AWS_EC2_METADATA_DISABLED=true", "AWS_PAGER=")
}

type awsInstance struct {
	ID    string `json:"InstanceId"`
	State struct{ Name string }
	Tags  []struct{ Key, Value string }
}

func (in awsInstance) tags() map[string]string {
	out := map[string]string{}
	for _, t := range in.Tags {
		out[t.Key] = t.Value
	}
	return out
}

// instances is `aws ec2 describe-instances [--filters FILTER]` of the
// instances not terminated (EC2 lists a terminated one for about an
// hour), by id.
func (a awsCLI) instances(t *testing.T, filter ...string) map[string]awsInstance {
	t.Helper()
	args := []string{"ec2", "describe-instances"}
	if len(filter) > 0 {
		args = append(args, "--filters", filter[0])
	}
	var out struct {
		Reservations []struct{ Instances []awsInstance }
	}
	if err := json.Unmarshal([]byte(a.run(t, args...)), &out); err != nil {
		t.Fatal(err)
	}
	live := map[string]awsInstance{}
	for _, r := range out.Reservations {
		for _, in := range r.Instances {
			if in.State.Name != "terminated" && in.State.Name != "shutting-down" {
				live[in.ID] = in
			}
		}
	}
	return live
}

// flow is issue 35's local-stack flow on the EC2 fake: the CLI makes
// an aws proxy that becomes Ready (its instance's engine answers the
// stack's status request through the proxy port) and serves a request;
// aws ec2 describe-instances lists its instance with the three tags;
// deleted, it leaves no instance and no Elastic IP; an instance aws ec2
// run-instances makes with the tags and no proxy is collected after the
// grace period, and one of another deployment is not.
func flow(t *testing.T, s providerstack.Stack, fake *ec2fake.Server) {
	path := testenv.Require(t, testenv.AWSCLI)
	a := awsCLI{path: path, endpoint: fake.Endpoint(), home: t.TempDir()}
	ns := []string{"--namespace", s.Namespace()}
	s.Create(t, "ec2", aws.Type, awsRegion)

	listed := a.instances(t, "Name=tag:proxy-operator-managed,Values=true")
	if len(listed) != 1 {
		t.Fatalf("aws ec2 describe-instances --filters Name=tag:proxy-operator-managed,Values=true: %v, want the proxy's instance alone", listed)
	}
	for _, in := range listed {
		tags := in.tags()
		uid := tags["proxy-operator-uid"]
		// The status id is the instance's own (a hash of its create
		// attempt): its shape is what can be known here.
		statusID := tags["egress-status-id"]
		want := map[string]string{"proxy-operator-managed": "true", "proxy-operator-uid": uid, "egress-deployment": provider.DefaultDeployment, "egress-proxy-port": "3128", "Name": tags["Name"],
			"egress-status-id": statusID}
		if diff := cmp.Diff(want, tags); diff != "" || in.State.Name != "running" || !regexp.MustCompile(`^[0-9a-f-]{36}$`).MatchString(uid) || !strings.HasPrefix(tags["Name"], "proxy-") ||
			!regexp.MustCompile(`^[0-9a-f]{32}$`).MatchString(statusID) {
			t.Errorf("the proxy's instance %s is %s with tags (-want +got):\n%s", in.ID, in.State.Name, diff)
		}
	}

	s.CLI(t, append([]string{"proxies", "delete", "ec2", "--wait", "--timeout", "90s"}, ns...)...)
	providerstack.WaitFor(t, time.Minute, "aws ec2 describe-instances to list no live instance", func() bool { return len(a.instances(t)) == 0 })
	var addrs struct{ Addresses []json.RawMessage }
	if err := json.Unmarshal([]byte(a.run(t, "ec2", "describe-addresses")), &addrs); err != nil || len(addrs.Addresses) != 0 {
		t.Errorf("aws ec2 describe-addresses after an Ephemeral proxy's deletion: %d left (%v), want none", len(addrs.Addresses), err)
	}

	// An orphan of this deployment, and an instance of another.
	launch := func(deployment string) string {
		var out struct{ Instances []awsInstance }
		err := json.Unmarshal([]byte(a.run(t, "ec2", "run-instances", "--image-id", fake.ImageID(awsRegion, "debian-13-amd64-20251117-2299"),
			"--instance-type", "t3.micro", "--count", "1", "--tag-specifications",
			"ResourceType=instance,Tags=[{Key=proxy-operator-managed,Value=true},{Key=proxy-operator-uid,Value="+uuid.NewString()+"},{Key=egress-deployment,Value="+deployment+"}]")), &out)
		if err != nil || len(out.Instances) != 1 {
			t.Fatalf("aws ec2 run-instances printed %+v (%v), want one instance", out, err)
		}
		return out.Instances[0].ID
	}
	orphan, staging := launch(provider.DefaultDeployment), launch("staging")
	providerstack.WaitFor(t, time.Minute, "the orphan to be collected", func() bool { _, ok := a.instances(t)[orphan]; return !ok })
	// Several collector runs later (GC_INTERVAL=1s), the other
	// deployment's instance is there still.
	time.Sleep(3 * time.Second)
	if _, ok := a.instances(t)[staging]; !ok {
		t.Errorf("the collector terminated an instance of another deployment")
	}
	a.run(t, "ec2", "terminate-instances", "--instance-ids", staging)
}

// startEC2 starts the stack's EC2 fake, its instances booting their
// engines on loopback addresses from the user-data the stack renders,
// and returns it with the stack's variables for it: its endpoint, and
// awsRegion the one region allowed.
func startEC2(t *testing.T) (*ec2fake.Server, []string) {
	t.Helper()
	f := ec2fake.New()
	f.StartServing(ec2fake.Serve{AllowDestinations: []string{"127.0.0.1/32"}, Tick: 500 * time.Millisecond})
	t.Cleanup(f.Close)
	return f, []string{aws.Plugin.FakeEndpoint + "=" + f.Endpoint(), "AWS_ALLOWED_REGIONS=" + awsRegion}
}
