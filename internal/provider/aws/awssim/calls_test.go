package awssim

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	awsprovider "github.com/egress-proxies/egress/internal/provider/aws"
	"github.com/egress-proxies/egress/internal/provider/aws/ec2fake"
	"github.com/egress-proxies/egress/internal/provider/providerbench"
)

// TestCallsAsCounted holds the plugin's calls per method, which the
// account's budget is spent by, to the EC2 actions the fake answered
// for each method of a warm process's lifecycle.
func TestCallsAsCounted(t *testing.T) {
	fake := ec2fake.New()
	t.Cleanup(fake.Close)
	p, err := benchProvider(fake)
	if err != nil {
		t.Fatal(err)
	}
	got, err := providerbench.CallsOf(context.Background(), p, fake.Settle, func() int { return len(fake.Calls()) }, benchRequest)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(awsprovider.Plugin.Calls, got); diff != "" {
		t.Errorf("the plugin's calls per method (-want) against the fake's count (+got):\n%s", diff)
	}
}
