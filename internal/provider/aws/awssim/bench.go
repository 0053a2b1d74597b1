package awssim

import (
	"context"
	"fmt"
	"io"
	"time"

	sdkaws "github.com/aws/aws-sdk-go-v2/aws"

	"github.com/egress-proxies/egress/internal/provider"
	awsprovider "github.com/egress-proxies/egress/internal/provider/aws"
	"github.com/egress-proxies/egress/internal/provider/aws/ec2fake"
	"github.com/egress-proxies/egress/internal/provider/providerbench"
	"github.com/egress-proxies/egress/internal/provider/vmside"
)

// Bench is the aws phase of make bench: proxy lifecycles on the aws
// provider itself, over the EC2 fake on loopback (aws-sdk-go-v2, signing
// and all, over HTTP), as the reconciler drives one at its floor: Create,
// a Get while it boots, a Get that sees it serve, Delete, a Get that
// finds it gone. What it counts is EC2 API requests, by action: EC2
// throttles each account by action (a bucket per action,
// RequestLimitExceeded past it), so requests per lifecycle say what a
// burst of proxies spends of each. Then one ListByTag over Listed
// instances of one region, the collector's listing: its requests (pages
// of 500) and time.
type Bench struct{}

var _ providerbench.Phase = Bench{}

// Listed is how many instances the listing of the phase reads.
const Listed = 1000

// Result is the aws phase's figures.
type Result struct {
	Lifecycles int `json:"lifecycles"`
	// Requests are the API requests of one lifecycle, by action, and
	// their sum (a region's zones and image are read once, then cached).
	Requests      map[string]float64 `json:"requestsPerLifecycle"`
	RequestsTotal float64            `json:"requestsPerLifecycleTotal"`
	// CallMs is the time of each provider call of the lifecycles, on
	// loopback: the provider's and the SDK's own cost.
	CallMs providerbench.Latency `json:"callMs"`
	// Listed instances, read by ListRequests requests in ListMs.
	Listed       int     `json:"listed"`
	ListRequests int     `json:"listRequests"`
	ListMs       float64 `json:"listMs"`
}

// Name is the phase's name: the provider's type.
func (Bench) Name() string { return awsprovider.Type }

// Run plays n lifecycles and the listing.
func (Bench) Run(ctx context.Context, n int) (providerbench.Result, error) {
	r, err := phase(ctx, n)
	if err != nil {
		return nil, err
	}
	return r, nil
}

func phase(ctx context.Context, n int) (*Result, error) {
	fake := ec2fake.New()
	defer fake.Close()
	p, err := benchProvider(fake)
	if err != nil {
		return nil, err
	}
	r := &Result{Lifecycles: n, Requests: map[string]float64{}, Listed: Listed}
	calls, err := providerbench.Lifecycles(ctx, p, fake.Settle, n, benchRequest)
	if err != nil {
		return r, err
	}
	for action, c := range fake.Actions() {
		r.Requests[action] = float64(c) / float64(n)
		r.RequestsTotal += float64(c) / float64(n)
	}
	r.CallMs = providerbench.Summarize(calls)

	for i := range Listed {
		fake.Put("us-east-1", "us-east-1a", map[string]string{provider.LabelManaged: provider.LabelManagedYes,
			provider.LabelUID: fmt.Sprintf("00000000-0000-4000-9000-%012d", i), provider.LabelDeployment: provider.DefaultDeployment})
	}
	before := len(fake.Calls())
	start := time.Now()
	list, err := p.ListByTag(ctx)
	r.ListMs = providerbench.Ms(time.Since(start))
	if err != nil || len(list) != Listed {
		return r, fmt.Errorf("ListByTag of %d instances: %d, %v", Listed, len(list), err)
	}
	r.ListRequests = len(fake.Calls()) - before
	return r, nil
}

// actions are the actions of a lifecycle, in the order the table shows
// them.
var actions = []string{"DescribeAvailabilityZones", "DescribeImages", "RunInstances", "DescribeInstances", "TerminateInstances"}

// Table prints the phase's figures.
func (a *Result) Table(w io.Writer) {
	fmt.Fprintf(w, "aws provider over the EC2 fake (loopback HTTP, aws-sdk-go-v2), %d lifecycles at the reconciler's floor: %.2f API requests each (", a.Lifecycles, a.RequestsTotal)
	sep := ""
	for _, act := range actions {
		if v, ok := a.Requests[act]; ok {
			fmt.Fprintf(w, "%s%s %.2f", sep, act, v)
			sep = ", "
		}
	}
	fmt.Fprintf(w, "); a provider call %.1f ms p50, %.1f ms p99;\n", a.CallMs.P50, a.CallMs.P99)
	fmt.Fprintf(w, "  ListByTag of %d instances in one region: %d requests (pages of 500, and its Elastic IPs), %.0f ms\n", a.Listed, a.ListRequests, a.ListMs)
}

// benchProvider is the aws provider over fake, in us-east-1, its VMs
// serving once booted.
func benchProvider(fake *ec2fake.Server) (provider.Provider, error) {
	creds := sdkaws.CredentialsProviderFunc(func(context.Context) (sdkaws.Credentials, error) {
		return sdkaws.Credentials{AccessKeyID: "EGRESS-BENCH", SecretAccessKey: "bench"}, nil
	})
	return awsprovider.New(awsprovider.NewClient(awsprovider.ClientOptions{Credentials: creds, Endpoint: fake.Endpoint(), HTTPClient: fake.Client()}),
		awsprovider.Config{
			Regions:  []string{"us-east-1"},
			Renderer: vmside.RendererFunc(func(provider.CreateRequest) (string, error) { return "#cloud-config\n", nil }),
			Prober: vmside.ProberFunc(func(context.Context, string, int32, string, string) (vmside.Status, error) {
				return vmside.Status{Ready: true, Generation: 1}, nil
			}),
		})
}

// benchRequest is the bench's i-th create.
func benchRequest(i int) provider.CreateRequest {
	uid := fmt.Sprintf("00000000-0000-4000-8000-%012d", i)
	return provider.CreateRequest{Name: provider.NameFromUID(uid), UID: uid, Namespace: "bench", ProxyName: "p",
		Placement: provider.Placement{Region: "us-east-1"}, StartupScript: "#!/bin/sh\n", Port: 3128}
}
