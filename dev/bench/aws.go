package main

import (
	"context"
	"fmt"
	"io"
	"time"

	sdkaws "github.com/aws/aws-sdk-go-v2/aws"

	"github.com/egress-proxies/egress/internal/provider"
	awsprovider "github.com/egress-proxies/egress/internal/provider/aws"
	"github.com/egress-proxies/egress/internal/provider/aws/ec2fake"
	"github.com/egress-proxies/egress/internal/provider/vmside"
)

// The aws phase: proxy lifecycles on the aws provider itself, over the
// EC2 fake on loopback (aws-sdk-go-v2, signing and all, over HTTP), as
// the reconciler drives one at its floor: Create, a Get while it boots, a
// Get that sees it serve, Delete, a Get that finds it gone. What it
// counts is EC2 API requests, by action: EC2 throttles each account by
// action (a bucket per action, RequestLimitExceeded past it), so
// requests per lifecycle say what a burst of proxies spends of each.
// Then one ListByTag over awsListed instances of one region, the
// collector's listing: its requests (pages of 500) and time. It needs no
// stack, and the VM's side is played: every instance serves once booted.

// awsListed is how many instances the listing of the phase reads.
const awsListed = 1000

// awsResult is the aws phase's figures.
type awsResult struct {
	Lifecycles int `json:"lifecycles"`
	// Requests are the API requests of one lifecycle, by action, and
	// their sum (a region's zones and image are read once, then cached).
	Requests      map[string]float64 `json:"requestsPerLifecycle"`
	RequestsTotal float64            `json:"requestsPerLifecycleTotal"`
	// CallMs is the time of each provider call of the lifecycles, on
	// loopback: the provider's and the SDK's own cost.
	CallMs latency `json:"callMs"`
	// Listed instances, read by ListRequests requests in ListMs.
	Listed       int     `json:"listed"`
	ListRequests int     `json:"listRequests"`
	ListMs       float64 `json:"listMs"`
}

func awsPhase(ctx context.Context, n int) (awsResult, error) {
	fake := ec2fake.New()
	defer fake.Close()
	creds := sdkaws.CredentialsProviderFunc(func(context.Context) (sdkaws.Credentials, error) {
		return sdkaws.Credentials{AccessKeyID: "EGRESS-BENCH", SecretAccessKey: "bench"}, nil
	})
	p, err := awsprovider.New(awsprovider.NewClient(awsprovider.ClientOptions{Credentials: creds, Endpoint: fake.Endpoint(), HTTPClient: fake.Client()}),
		awsprovider.Config{
			Regions:  []string{"us-east-1"},
			Renderer: vmside.RendererFunc(func(provider.CreateRequest) (string, error) { return "#cloud-config\n", nil }),
			Prober: vmside.ProberFunc(func(context.Context, string, int32, string, string) (vmside.Status, error) {
				return vmside.Status{Ready: true, Generation: 1}, nil
			}),
		})
	if err != nil {
		return awsResult{}, err
	}
	r := awsResult{Lifecycles: n, Requests: map[string]float64{}, Listed: awsListed}
	var calls []time.Duration
	timed := func(f func() error) error {
		start := time.Now()
		err := f()
		calls = append(calls, time.Since(start))
		return err
	}
	for i := range n {
		uid := fmt.Sprintf("00000000-0000-4000-8000-%012d", i)
		req := provider.CreateRequest{Name: provider.NameFromUID(uid), UID: uid, Namespace: "bench", ProxyName: "p",
			Placement: provider.Placement{Region: "us-east-1"}, StartupScript: "#!/bin/sh\n", Port: 3128}
		for _, step := range lifecycle(ctx, p, fake.Settle, req) {
			if err := timed(step); err != nil {
				return r, fmt.Errorf("lifecycle %d: %w", i, err)
			}
		}
	}
	for action, c := range fake.Actions() {
		r.Requests[action] = float64(c) / float64(n)
		r.RequestsTotal += float64(c) / float64(n)
	}
	r.CallMs = summarize(calls)

	for i := range awsListed {
		fake.Put("us-east-1", "us-east-1a", map[string]string{provider.LabelManaged: provider.LabelManagedYes,
			provider.LabelUID: fmt.Sprintf("00000000-0000-4000-9000-%012d", i), provider.LabelDeployment: provider.DefaultDeployment})
	}
	before := len(fake.Calls())
	start := time.Now()
	list, err := p.ListByTag(ctx)
	r.ListMs = ms(time.Since(start))
	if err != nil || len(list) != awsListed {
		return r, fmt.Errorf("ListByTag of %d instances: %d, %v", awsListed, len(list), err)
	}
	r.ListRequests = len(fake.Calls()) - before
	return r, nil
}

// aws is the phase as the benchmark runs it.
func (b *bench) aws(ctx context.Context, r *results) error {
	var err error
	r.AWS, err = awsPhase(ctx, b.s.lifecycles)
	return err
}

// awsActions are the actions of a lifecycle, in the order the table
// shows them.
var awsActions = []string{"DescribeAvailabilityZones", "DescribeImages", "RunInstances", "DescribeInstances", "TerminateInstances"}

func (a awsResult) table(w io.Writer) {
	fmt.Fprintf(w, "aws provider over the EC2 fake (loopback HTTP, aws-sdk-go-v2), %d lifecycles at the reconciler's floor: %.2f API requests each (", a.Lifecycles, a.RequestsTotal)
	sep := ""
	for _, act := range awsActions {
		if v, ok := a.Requests[act]; ok {
			fmt.Fprintf(w, "%s%s %.2f", sep, act, v)
			sep = ", "
		}
	}
	fmt.Fprintf(w, "); a provider call %.1f ms p50, %.1f ms p99;\n", a.CallMs.P50, a.CallMs.P99)
	fmt.Fprintf(w, "  ListByTag of %d instances in one region: %d requests (pages of 500, and its Elastic IPs), %.0f ms\n", a.Listed, a.ListRequests, a.ListMs)
}
