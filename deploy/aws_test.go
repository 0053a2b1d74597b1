package deploy_test

import (
	"encoding/json"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	awsprovider "github.com/egress-proxies/egress/internal/provider/aws"
)

// awsClientPackages are AWS's client packages whose calls the deploy
// tests follow, as deploy.ClientPackages are Google's: a call into one
// is an EC2 action the role's policy must allow.
var awsClientPackages = map[string]string{
	"github.com/aws/aws-sdk-go-v2/service/ec2":     "ec2",
	"github.com/aws/aws-sdk-go-v2/service/pricing": "awspricing",
}

// ec2NoAction are the functions of the EC2 client package that send no
// action of their own, or one counted by name: its constructor, and its
// paginator, whose pages are DescribeInstances calls.
var ec2NoAction = map[string][]string{
	"ec2.New":                           nil,
	"ec2.NewDescribeInstancesPaginator": nil,
	"ec2.(*DescribeInstancesPaginator).HasMorePages": nil,
	"ec2.(*DescribeInstancesPaginator).NextPage":     {"ec2:DescribeInstances"},
	// The Price List's client, which the daily price refresh reads with
	// the same role: its paginator's pages are GetProducts calls.
	"awspricing.New":                                  nil,
	"awspricing.NewGetProductsPaginator":              nil,
	"awspricing.(*GetProductsPaginator).HasMorePages": nil,
	"awspricing.(*GetProductsPaginator).NextPage":     {"pricing:GetProducts"},
	"awspricing.(*Client).GetProducts":                {"pricing:GetProducts"},
}

// ec2Actions are the IAM actions a call of the EC2 client sends: a
// method of its Client is the action of its name (Client.RunInstances is
// ec2:RunInstances).
func ec2Actions(key string) []string {
	if a, ok := ec2NoAction[key]; ok {
		return a
	}
	if method, ok := strings.CutPrefix(key, "ec2.(*Client)."); ok {
		return []string{"ec2:" + method}
	}
	return []string{"unknown:" + key}
}

// awsPolicy is an IAM policy document, as far as the test reads it.
type awsPolicy struct {
	Version   string
	Statement []struct {
		Sid       string
		Effect    string
		Principal map[string]string
		Action    strList
		Resource  strList
		Condition map[string]map[string]strList
	}
}

// strList is IAM's "one string or a list of them".
type strList []string

func (s *strList) UnmarshalJSON(b []byte) error {
	var one string
	if json.Unmarshal(b, &one) == nil {
		*s = []string{one}
		return nil
	}
	var many []string
	err := json.Unmarshal(b, &many)
	*s = many
	return err
}

// render fills a .tftpl of the aws/ module as Terraform's templatefile
// would, with string values, and parses the policy.
func render(t *testing.T, name string, vars map[string]string) awsPolicy {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(terraformDir, "aws", name))
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	for k, v := range vars {
		text = strings.ReplaceAll(text, "${"+k+"}", v)
	}
	if strings.Contains(text, "${") {
		t.Fatalf("%s has a template variable the test does not fill:\n%s", name, text)
	}
	var p awsPolicy
	if err := json.Unmarshal([]byte(text), &p); err != nil {
		t.Fatalf("%s is no JSON policy once rendered: %v\n%s", name, err, text)
	}
	return p
}

// TestTheAWSRoleHoldsWhatItsCallsNeed: the role the functions assume
// allows exactly the EC2 actions their code can reach (the same
// analysis that holds the Google accounts to their calls), and
// ec2:CreateTags only as part of a launch or an allocation (which
// TagSpecifications need); each action that changes something is
// limited to this deployment's resources by their tags, except on the
// resources EC2 has no tags of ours on (an image, a subnet, Amazon's
// address pool); reads are on "*", since EC2's Describe actions take no
// resource. A new EC2 call, an action no call needs and an unconditioned
// write each fail here.
func TestTheAWSRoleHoldsWhatItsCallsNeed(t *testing.T) {
	calls := reachedCalls(t, functionsPkg)
	need := map[string]bool{}
	for name, cs := range calls {
		for _, c := range cs {
			for _, m := range c.api {
				switch {
				case strings.HasPrefix(m, "unknown:ec2.") || strings.HasPrefix(m, "unknown:awspricing."):
					t.Errorf("%s calls %s (in %s), which ec2Actions does not account for", name, c.client, c.where)
				case strings.HasPrefix(m, "ec2:") || strings.HasPrefix(m, "pricing:"):
					if name == "ProxyAPI" {
						t.Errorf("ProxyAPI calls %s (in %s): only Reconcile and CollectGarbage assume the role", m, c.where)
					}
					need[m] = true
				}
			}
		}
	}
	if len(need) == 0 {
		t.Fatal("the analysis found no EC2 call: the aws provider is not reached from the entry points")
	}
	const deployment = "staging"
	// The file the plugin says grants the provider's permissions.
	policy, ok := strings.CutPrefix(awsprovider.Plugin.Terraform.Policy, "deploy/terraform/aws/")
	if !ok {
		t.Fatalf("the aws plugin's Terraform.Policy %q is not a file of deploy/terraform/aws", awsprovider.Plugin.Terraform.Policy)
	}
	p := render(t, policy, map[string]string{"deployment": deployment})
	granted := map[string]bool{}
	// Resources EC2 lets no condition on our tags limit: an AMI (Debian's
	// account's), a subnet of the default VPC, Amazon's pool of addresses.
	untagged := []string{"arn:aws:ec2:*::image/*", "arn:aws:ec2:*:*:subnet/*", "arn:aws:ec2:*:*:ipv4pool-ec2/*"}
	for _, st := range p.Statement {
		if st.Effect != "Allow" {
			t.Errorf("statement %s: effect %s, want Allow only", st.Sid, st.Effect)
		}
		reads := true
		for _, a := range st.Action {
			granted[a] = true
			// The Price List's GetProducts reads public prices and
			// takes no resource either.
			reads = reads && (strings.HasPrefix(a, "ec2:Describe") || a == "pricing:GetProducts")
		}
		tagged := st.Condition["StringEquals"]["aws:RequestTag/egress-deployment"]
		if tagged == nil {
			tagged = st.Condition["StringEquals"]["ec2:ResourceTag/egress-deployment"]
		}
		switch {
		case reads:
			if !slices.Equal(st.Resource, []string{"*"}) || st.Condition != nil {
				t.Errorf("statement %s reads on %v with %v: EC2's Describe actions and the Price List's GetProducts take no resource, so \"*\" and no condition", st.Sid, st.Resource, st.Condition)
			}
		case slices.Equal(st.Action, []string{"ec2:CreateTags"}):
			if got := st.Condition["StringEquals"]["ec2:CreateAction"]; !slices.Equal(got, []string{"RunInstances", "AllocateAddress"}) {
				t.Errorf("ec2:CreateTags is allowed with %v, want only within RunInstances and AllocateAddress (ec2:CreateAction)", st.Condition)
			}
		case slices.Equal(tagged, []string{deployment}):
		default:
			for _, r := range st.Resource {
				if !slices.Contains(untagged, r) {
					t.Errorf("statement %s allows %v on %s without a condition on the tag egress-deployment", st.Sid, st.Action, r)
				}
			}
		}
	}
	want := map[string]bool{"ec2:CreateTags": true}
	for a := range need {
		want[a] = true
	}
	if diff := cmp.Diff(want, granted); diff != "" {
		t.Errorf("the role's actions (-what the code calls, and CreateTags +what policy.json.tftpl allows):\n%s", diff)
	}
}

// TestTheAWSRoleTrustsTheFunctionsOnly: the role's trust is Google's
// identity provider, tokens for the deployment's audience, and the two
// functions' accounts as both the token's azp (accounts.google.com:aud)
// and its subject; nothing else may assume it.
func TestTheAWSRoleTrustsTheFunctionsOnly(t *testing.T) {
	ids := []string{"104729384756102938475", "204729384756102938475"}
	b, _ := json.Marshal(ids)
	p := render(t, "trust.json.tftpl", map[string]string{"audience": "https://egress-proxies.p.staging/aws", "subjects": string(b)})
	if len(p.Statement) != 1 {
		t.Fatalf("the trust policy has %d statements, want 1", len(p.Statement))
	}
	st := p.Statement[0]
	got := map[string]any{"effect": st.Effect, "principal": st.Principal, "action": []string(st.Action), "condition": st.Condition}
	want := map[string]any{"effect": "Allow", "principal": map[string]string{"Federated": "accounts.google.com"}, "action": []string{"sts:AssumeRoleWithWebIdentity"},
		"condition": map[string]map[string]strList{"StringEquals": {
			"accounts.google.com:oaud": {"https://egress-proxies.p.staging/aws"},
			"accounts.google.com:aud":  ids,
			"accounts.google.com:sub":  ids,
		}}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the role's trust (-want +got):\n%s", diff)
	}
	// The security group the module makes is the one the provider
	// launches into.
	main, err := os.ReadFile(filepath.Join(terraformDir, "aws", "main.tf"))
	if err != nil {
		t.Fatal(err)
	}
	if want := `security_group = "` + strings.Replace(awsprovider.DefaultSecurityGroup("DEPLOYMENT"), "DEPLOYMENT", "${var.deployment}", 1) + `"`; !strings.Contains(string(main), want) {
		t.Errorf("aws/main.tf does not name the security group as the provider does: want %s", want)
	}
}

// TestNoAWSKeyAnywhere: no code the functions run reads an AWS key from
// the environment, no Terraform or script sets one, no document or
// source holds a long-lived key id (AKIA…); and the deployed functions
// link no package that would read one by itself (the SDK's config
// loader reads AWS_ACCESS_KEY_ID). The CLI test sets dummy keys for the
// CLI, which needs some to sign: tests are not scanned, nor the clouds'
// flows of the local stack's test (internal/provider/TYPE/TYPEsim/stack.go,
// test code that the stack's test imports, so not in a _test.go file).
func TestNoAWSKeyAnywhere(t *testing.T) {
	keyID := regexp.MustCompile(`\b(AKIA|ASIA)[0-9A-Z]{16}\b`)
	names := regexp.MustCompile(`AWS_ACCESS_KEY_ID|AWS_SECRET_ACCESS_KEY|AWS_SESSION_TOKEN|aws_access_key_id|aws_secret_access_key`)
	scanned := 0
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); n == ".git" || n == "node_modules" || n == "testdata" || n == ".terraform" {
				return filepath.SkipDir
			}
			return nil
		}
		ext := filepath.Ext(path)
		flow, _ := filepath.Match(filepath.Join("..", "internal", "provider", "*", "*sim", "stack.go"), path)
		code := (ext == ".go" && !strings.HasSuffix(path, "_test.go") && !flow) || ext == ".tf" || ext == ".tftpl" || ext == ".sh" || strings.HasSuffix(path, ".ci/run")
		doc := ext == ".md" || ext == ".json" || ext == ".example"
		if !code && !doc {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		scanned++
		if m := keyID.Find(b); m != nil {
			t.Errorf("%s holds what looks like an AWS access key id, %s", path, m)
		}
		if m := names.Find(b); code && m != nil {
			t.Errorf("%s names %s: no code path reads or sets an AWS key; the functions assume their role by federation", path, m)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if scanned < 100 {
		t.Fatalf("scanned %d files: the walk did not see the tree", scanned)
	}
	out, err := exec.Command("go", "list", "-deps", "../functions").Output()
	if err != nil {
		t.Fatalf("go list -deps ./functions: %v", err)
	}
	deps := strings.Fields(string(out))
	for _, forbidden := range []string{"github.com/aws/aws-sdk-go-v2/config", "github.com/aws/aws-sdk-go-v2/feature/ec2/imds"} {
		if slices.Contains(deps, forbidden) {
			t.Errorf("the deployed functions link %s, which reads AWS keys from the environment and files by itself", forbidden)
		}
	}
	if !slices.Contains(deps, "github.com/aws/aws-sdk-go-v2/credentials/stscreds") {
		t.Errorf("the deployed functions do not link stscreds: how do they reach AWS?")
	}
}

// TestTheAWSSecurityGroupAdmitsTheStatusRequest: the aws/ module's
// security group opens every proxy port to the tenants' sources and to
// the control plane's egress addresses (status_source_ranges, the main
// module's output of that name), from which the control plane asks each
// instance's proxy for its status, as the Hetzner firewall does; without
// the second, no instance is ever seen serving.
func TestTheAWSSecurityGroupAdmitsTheStatusRequest(t *testing.T) {
	m := parseModuleAt(t, filepath.Join(terraformDir, "aws"))
	main := parseModule(t)
	outputs := map[string]bool{}
	for _, b := range main.blocks {
		if b.Type == "output" {
			outputs[b.Labels[0]] = true
		}
	}
	if !outputs["status_source_ranges"] {
		t.Errorf("the main module has no output status_source_ranges for the aws/ module's variable")
	}
	var sources []string
	for _, b := range m.blocks {
		if b.Type != "resource" || !slices.Equal(b.Labels, []string{"aws_security_group", "proxy"}) {
			continue
		}
		for _, d := range nested(b.Body, "dynamic") {
			if len(d.Labels) != 1 || d.Labels[0] != "ingress" {
				continue
			}
			if src := m.source(t, d.Body.Attributes["for_each"].Expr.Range()); src != "var.proxy_ports" {
				t.Errorf("the ingress rules are one per %s, want one per var.proxy_ports", src)
			}
			for _, c := range nested(d.Body, "content") {
				if a, ok := c.Body.Attributes["cidr_blocks"]; ok {
					sources = append(sources, m.source(t, c.Body.Attributes["protocol"].Expr.Range())+" "+m.source(t, a.Expr.Range()))
				}
			}
		}
	}
	// The tenants' sources on TCP and on UDP (SOCKS5's relay), the
	// control plane's on TCP alone.
	if diff := cmp.Diff([]string{`"tcp" local.ipv4_ranges`, `"udp" local.ipv4_ranges`, `"tcp" var.status_source_ranges`}, sources); diff != "" {
		t.Errorf("the IPv4 sources of the security group's rules over proxy_ports (-want +got):\n%s", diff)
	}
}
