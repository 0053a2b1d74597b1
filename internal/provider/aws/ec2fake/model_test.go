package ec2fake

import (
	"context"
	"encoding/json"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
	"unicode"

	sdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// The service models Debian's awscli ships (botocore's data), where the
// fake's shapes are checked.
var modelDirs = []string{
	"/usr/lib/python3/dist-packages/awscli/botocore/data",
	"/usr/lib/python3/dist-packages/botocore/data",
}

// model is the part of a botocore service model the checks read.
type model struct {
	Operations map[string]struct {
		Input  *struct{ Shape string } `json:"input"`
		Output *struct{ Shape string } `json:"output"`
	} `json:"operations"`
	Shapes map[string]shape `json:"shapes"`
}

type shape struct {
	Type    string            `json:"type"`
	Members map[string]member `json:"members"`
	Member  *member           `json:"member"`
}

type member struct {
	Shape        string `json:"shape"`
	LocationName string `json:"locationName"`
	QueryName    string `json:"queryName"`
}

func loadModel(t *testing.T, rel string) *model {
	t.Helper()
	for _, dir := range modelDirs {
		b, err := os.ReadFile(dir + "/" + rel)
		if err != nil {
			continue
		}
		var m model
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatalf("%s/%s: %v", dir, rel, err)
		}
		return &m
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("no %s in %v: under CI Debian's awscli must be installed (scripts/install-deps.sh)", rel, modelDirs)
	}
	t.Skipf("skipping: no %s (Debian's awscli, which scripts/install-deps.sh installs, ships it)", rel)
	return nil
}

// queryKey is a member's name in EC2's query protocol: its queryName, or
// its locationName with the first letter upper, or its name.
func queryKey(name string, m member) string {
	switch {
	case m.QueryName != "":
		return m.QueryName
	case m.LocationName != "":
		r := []rune(m.LocationName)
		r[0] = unicode.ToUpper(r[0])
		return string(r)
	}
	return name
}

// checkPath holds a query parameter path the fake reads
// ("TagSpecification.N.Tag.N.Key") to an input shape: each segment a
// member by its query key, N after each list.
func (m *model) checkPath(shapeName, path string) string {
	segs := strings.Split(path, ".")
	sh := m.Shapes[shapeName]
	for i := 0; i < len(segs); i++ {
		seg := segs[i]
		var found *member
		for name, mem := range sh.Members {
			if queryKey(name, mem) == seg {
				found = &mem
				break
			}
		}
		if found == nil {
			return "no member " + seg + " in " + shapeName
		}
		next := m.Shapes[found.Shape]
		if next.Type == "list" {
			if i+1 >= len(segs) || segs[i+1] != "N" {
				return seg + " is a list: want " + seg + ".N"
			}
			i++
			next = m.Shapes[next.Member.Shape]
		}
		shapeName, sh = found.Shape, next
	}
	if i := len(segs) - 1; sh.Type == "structure" {
		return segs[i] + " is a structure, read as a scalar"
	}
	return ""
}

// checkXML holds a Go type the fake writes to a shape, field by field:
// each XML name a member's locationName (or name), each a>item a list
// of locationName a, each scalar of the member's kind.
func (m *model) checkXML(t *testing.T, where string, typ reflect.Type, shapeName string, allowed ...string) {
	t.Helper()
	sh := m.Shapes[shapeName]
	for f := range typ.Fields() {
		if f.Anonymous || f.Name == "XMLName" {
			continue // Meta: the root's name, namespace and requestId
		}
		tag := strings.Split(f.Tag.Get("xml"), ",")
		if slices.Contains(tag[1:], "attr") {
			continue
		}
		name, item, isList := strings.Cut(tag[0], ">")
		if slices.Contains(allowed, name) {
			continue
		}
		var mem *member
		for n, x := range sh.Members {
			if cmpName(n, x) == name {
				mem = &x
				break
			}
		}
		if mem == nil {
			t.Errorf("%s.%s: <%s> is no member of %s", where, f.Name, name, shapeName)
			continue
		}
		target, ft := m.Shapes[mem.Shape], f.Type
		if isList {
			if target.Type != "list" {
				t.Errorf("%s.%s: <%s> is a %s in the model, written as a list", where, f.Name, name, target.Type)
				continue
			}
			if want := cmpItem(target.Member); want != item {
				t.Errorf("%s.%s: the items of <%s> are <%s> in the model, written <%s>", where, f.Name, name, want, item)
			}
			mem, target, ft = target.Member, m.Shapes[target.Member.Shape], ft.Elem()
		}
		for ft.Kind() == reflect.Pointer || ft.Kind() == reflect.Slice {
			ft = ft.Elem()
		}
		switch k := ft.Kind(); {
		case k == reflect.Struct:
			if target.Type != "structure" {
				t.Errorf("%s.%s: <%s> is a %s in the model, written as a structure", where, f.Name, name, target.Type)
				continue
			}
			m.checkXML(t, where+"."+f.Name, ft, mem.Shape)
		case !scalarFits(k, target.Type):
			t.Errorf("%s.%s: <%s> is a %s in the model, written as a Go %s", where, f.Name, name, target.Type, k)
		}
	}
}

// cmpName is a member's XML name in an answer: its locationName, or its
// name (awsquery's, STS's).
func cmpName(name string, m member) string {
	if m.LocationName != "" {
		return m.LocationName
	}
	return name
}

func cmpItem(m *member) string {
	if m.LocationName != "" {
		return m.LocationName
	}
	return "member"
}

func scalarFits(k reflect.Kind, typ string) bool {
	switch typ {
	case "string", "timestamp", "blob":
		return k == reflect.String
	case "integer", "long":
		return k == reflect.Int || k == reflect.Int32 || k == reflect.Int64
	case "boolean":
		return k == reflect.Bool
	}
	return false
}

// answers are the Go types the fake writes for each action it serves.
var answers = map[string]any{
	"RunInstances":              reservationResponse{},
	"DescribeInstances":         describeInstancesResponse{},
	"TerminateInstances":        terminateResponse{},
	"AllocateAddress":           allocateResponse{},
	"AssociateAddress":          associateResponse{},
	"DisassociateAddress":       returnResponse{},
	"DescribeAddresses":         addressesResponse{},
	"ReleaseAddress":            returnResponse{},
	"DescribeAvailabilityZones": azResponse{},
	"DescribeImages":            imagesResponse{},
	"DescribeSubnets":           subnetsResponse{},
	"DescribeSecurityGroups":    securityGroupsResponse{},
	"DescribeAccountAttributes": accountAttributesResponse{},
}

// TestTheFakeKeepsToTheServiceModel holds the fake to AWS's published
// EC2 model (ec2/2016-11-15/service-2.json): every query parameter it
// reads, as the SDK sends them, is a member of the operation's input by
// its query name, and every element of every answer a member of its
// output by its locationName; and STS's AssumeRoleWithWebIdentity the
// same against sts/2011-06-15. Every action it serves has an answer
// checked.
func TestTheFakeKeepsToTheServiceModel(t *testing.T) {
	ec2Model := loadModel(t, "ec2/2016-11-15/service-2.json")
	f := New()
	defer f.Close()
	exercise(t, f)

	if diff := slices.Compare(Served(), sortedKeys(answers)); diff != 0 {
		t.Fatalf("the fake serves %v and the test checks answers of %v", Served(), sortedKeys(answers))
	}
	reads := f.Reads()
	for _, action := range Served() {
		op, ok := ec2Model.Operations[action]
		if !ok {
			t.Errorf("%s is no operation of EC2's model", action)
			continue
		}
		if len(reads[action]) == 0 {
			t.Errorf("%s: the exercise read no parameter of it", action)
		}
		for _, path := range reads[action] {
			if msg := ec2Model.checkPath(op.Input.Shape, path); msg != "" {
				t.Errorf("%s reads %s: %s", action, path, msg)
			}
		}
		if op.Output == nil {
			// No output in the model: EC2 answers <return>true</return>.
			ec2Model.checkXML(t, action, reflect.TypeOf(answers[action]), "", "return")
			continue
		}
		ec2Model.checkXML(t, action, reflect.TypeOf(answers[action]), op.Output.Shape)
	}

	stsModel := loadModel(t, "sts/2011-06-15/service-2.json")
	op := stsModel.Operations["AssumeRoleWithWebIdentity"]
	for _, p := range []string{"RoleArn", "RoleSessionName", "WebIdentityToken", "DurationSeconds"} {
		if msg := stsModel.checkPath(op.Input.Shape, p); msg != "" {
			t.Errorf("AssumeRoleWithWebIdentity reads %s: %s", p, msg)
		}
	}
	stsModel.checkXML(t, "AssumeRoleWithWebIdentity", reflect.TypeOf(stsResult{}), op.Output.Shape)
}

func sortedKeys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// exercise calls every action the fake serves through the SDK, with
// every parameter it reads set.
func exercise(t *testing.T, f *Server) {
	t.Helper()
	ctx := context.Background()
	c := ec2.New(ec2.Options{Region: "us-east-1", BaseEndpoint: sdk.String(f.Endpoint()), HTTPClient: f.Client(),
		Credentials: sdk.CredentialsProviderFunc(func(context.Context) (sdk.Credentials, error) {
			return sdk.Credentials{AccessKeyID: "EGRESS-FAKE-TEST-KEY", SecretAccessKey: "not-a-secret"}, nil
		})})
	must := func(action string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", action, err)
		}
	}
	filter := func(name string, values ...string) types.Filter {
		return types.Filter{Name: sdk.String(name), Values: values}
	}
	tags := func(typ types.ResourceType) types.TagSpecification {
		return types.TagSpecification{ResourceType: typ, Tags: []types.Tag{{Key: sdk.String("k"), Value: sdk.String("v")}}}
	}
	_, err := c.DescribeAvailabilityZones(ctx, &ec2.DescribeAvailabilityZonesInput{ZoneNames: []string{"us-east-1a"}, Filters: []types.Filter{filter("state", "available")}})
	must("DescribeAvailabilityZones", err)
	ims, err := c.DescribeImages(ctx, &ec2.DescribeImagesInput{Owners: []string{DebianOwner}, ImageIds: []string{amiID("us-east-1", "debian-13-amd64-20251117-2299")},
		Filters: []types.Filter{filter("name", "debian-13-amd64-*")}})
	must("DescribeImages", err)
	if len(ims.Images) != 1 {
		t.Fatalf("DescribeImages answered %d images, want 1", len(ims.Images))
	}
	run, err := c.RunInstances(ctx, &ec2.RunInstancesInput{
		ImageId: ims.Images[0].ImageId, InstanceType: types.InstanceTypeT3Micro, MinCount: sdk.Int32(1), MaxCount: sdk.Int32(1),
		ClientToken: sdk.String("model-test"), Placement: &types.Placement{AvailabilityZone: sdk.String("us-east-1b")},
		UserData: sdk.String("I2Nsb3VkLWNvbmZpZwo="), SecurityGroups: []string{"egress-proxy-egress"}, SecurityGroupIds: []string{"sg-0123456789abcdef0"},
		TagSpecifications: []types.TagSpecification{tags(types.ResourceTypeInstance), tags(types.ResourceTypeVolume)},
		MetadataOptions: &types.InstanceMetadataOptionsRequest{HttpTokens: types.HttpTokensStateRequired, HttpPutResponseHopLimit: sdk.Int32(1),
			HttpEndpoint: types.InstanceMetadataEndpointStateEnabled, InstanceMetadataTags: types.InstanceMetadataTagsStateDisabled},
	})
	must("RunInstances", err)
	if len(run.Instances) != 1 || run.Instances[0].InstanceId == nil {
		t.Fatalf("RunInstances answered %+v, which the SDK read as no instance", run.Instances)
	}
	id := *run.Instances[0].InstanceId
	// A launch into a dual-stack subnet, its interface with an IPv6
	// address and a delegated prefix, in a group by id.
	f.SetIPv6Subnet("us-east-1b")
	subnets, err := c.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{Filters: []types.Filter{filter("availability-zone", "us-east-1b"), filter("default-for-az", "true")}})
	must("DescribeSubnets", err)
	if len(subnets.Subnets) != 1 || len(subnets.Subnets[0].Ipv6CidrBlockAssociationSet) != 1 || subnets.Subnets[0].VpcId == nil {
		t.Fatalf("DescribeSubnets answered %+v, which the SDK read as no dual-stack subnet", subnets.Subnets)
	}
	_, err = c.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{SubnetIds: []string{*subnets.Subnets[0].SubnetId}})
	must("DescribeSubnets", err)
	groups, err := c.DescribeSecurityGroups(ctx, &ec2.DescribeSecurityGroupsInput{GroupNames: []string{"egress-proxy-egress"},
		Filters: []types.Filter{filter("vpc-id", *subnets.Subnets[0].VpcId)}})
	must("DescribeSecurityGroups", err)
	if len(groups.SecurityGroups) != 1 || groups.SecurityGroups[0].GroupId == nil {
		t.Fatalf("DescribeSecurityGroups answered %+v, which the SDK read as no group", groups.SecurityGroups)
	}
	_, err = c.DescribeSecurityGroups(ctx, &ec2.DescribeSecurityGroupsInput{GroupIds: []string{*groups.SecurityGroups[0].GroupId}})
	must("DescribeSecurityGroups", err)
	dual, err := c.RunInstances(ctx, &ec2.RunInstancesInput{
		ImageId: ims.Images[0].ImageId, InstanceType: types.InstanceTypeT3Micro, MinCount: sdk.Int32(1), MaxCount: sdk.Int32(1),
		NetworkInterfaces: []types.InstanceNetworkInterfaceSpecification{{DeviceIndex: sdk.Int32(0), SubnetId: subnets.Subnets[0].SubnetId,
			Groups: []string{*groups.SecurityGroups[0].GroupId}, AssociatePublicIpAddress: sdk.Bool(true), DeleteOnTermination: sdk.Bool(true),
			Ipv6AddressCount: sdk.Int32(1), Ipv6PrefixCount: sdk.Int32(1)}},
	})
	must("RunInstances", err)
	if nis := dual.Instances[0].NetworkInterfaces; len(nis) != 1 || len(nis[0].Ipv6Prefixes) != 1 || len(nis[0].Ipv6Addresses) != 1 || dual.Instances[0].Ipv6Address == nil {
		t.Fatalf("RunInstances answered interfaces %+v, which the SDK read as no IPv6 address and prefix", nis)
	}
	_, err = c.DescribeInstances(ctx, &ec2.DescribeInstancesInput{Filters: []types.Filter{filter("tag:k", "v")}, MaxResults: sdk.Int32(5)})
	must("DescribeInstances", err)
	_, err = c.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{id}, NextToken: sdk.String("page-0")})
	must("DescribeInstances", err)
	f.Settle()
	a, err := c.AllocateAddress(ctx, &ec2.AllocateAddressInput{Domain: types.DomainTypeVpc, TagSpecifications: []types.TagSpecification{tags(types.ResourceTypeElasticIp)}})
	must("AllocateAddress", err)
	as, err := c.AssociateAddress(ctx, &ec2.AssociateAddressInput{AllocationId: a.AllocationId, InstanceId: &id, AllowReassociation: sdk.Bool(false)})
	must("AssociateAddress", err)
	_, err = c.DescribeAddresses(ctx, &ec2.DescribeAddressesInput{AllocationIds: []string{*a.AllocationId}, PublicIps: []string{*a.PublicIp},
		Filters: []types.Filter{filter("tag-key", "k")}})
	must("DescribeAddresses", err)
	_, err = c.DisassociateAddress(ctx, &ec2.DisassociateAddressInput{AssociationId: as.AssociationId})
	must("DisassociateAddress", err)
	_, err = c.ReleaseAddress(ctx, &ec2.ReleaseAddressInput{AllocationId: a.AllocationId})
	must("ReleaseAddress", err)
	_, err = c.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: []string{id}})
	must("TerminateInstances", err)
	f.SetQuotas(EC2Quotas)
	attrs, err := c.DescribeAccountAttributes(ctx, &ec2.DescribeAccountAttributesInput{
		AttributeNames: []types.AccountAttributeName{types.AccountAttributeNameDefaultVpc, "vpc-max-elastic-ips"}})
	must("DescribeAccountAttributes", err)
	if len(attrs.AccountAttributes) != 2 || len(attrs.AccountAttributes[1].AttributeValues) != 1 {
		t.Fatalf("DescribeAccountAttributes answered %+v, which the SDK read as not the two attributes asked", attrs.AccountAttributes)
	}
}
