package hetznersim

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/internal/provider/hetzner"
	"github.com/egress-proxies/egress/internal/provider/hetzner/hetznerfake"
	"github.com/egress-proxies/egress/internal/provider/providerbench"
)

// TestCallsAsCounted holds the plugin's calls per method, which the
// project's budget is spent by, to the API requests the Hetzner fake
// counted for each method of a warm process's lifecycle (every request
// carries the token, so the token's count is every request).
func TestCallsAsCounted(t *testing.T) {
	fake := hetznerfake.New(benchToken)
	t.Cleanup(fake.Close)
	p, err := benchProvider(fake)
	if err != nil {
		t.Fatal(err)
	}
	got, err := providerbench.CallsOf(context.Background(), p, fake.Settle, func() int { return fake.Tokens()[benchToken] }, benchRequest)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(hetzner.Plugin.Calls, got); diff != "" {
		t.Errorf("the plugin's calls per method (-want) against the fake's count (+got):\n%s", diff)
	}
}
