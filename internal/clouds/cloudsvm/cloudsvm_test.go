package cloudsvm_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/egress-proxies/egress/internal/clouds"
	"github.com/egress-proxies/egress/internal/clouds/cloudsvm"
	"github.com/egress-proxies/egress/internal/vm/vmconfig"
)

// TestEveryBootsPartIsLinked: the VM side's list and the clouds' boots
// agree. Each production cloud whose boot asks a Static proxy's VM to run
// a VM-side part (Boot.Follow) names one that the agent links, so no
// Droplet waits for a part its agent cannot run; each part the agent
// links is named by some cloud's boot, and once, so none is dead weight
// on every VM.
func TestEveryBootsPartIsLinked(t *testing.T) {
	linked := map[string]int{}
	for _, f := range cloudsvm.Followers() {
		linked[f.Name()]++
	}
	asked := map[string]string{}
	for _, p := range clouds.All {
		if p.Boot.Follow == "" {
			continue
		}
		name, _, err := vmconfig.ParseFollow(p.Boot.Follow)
		if err != nil {
			t.Errorf("%s's boot: %v", p.Type, err)
			continue
		}
		asked[name] = p.Type
		if linked[name] == 0 {
			t.Errorf("%s's boot asks for the VM-side part %q, which cloudsvm.Followers does not list", p.Type, name)
		}
	}
	// A part asked for is linked (above), and a part linked is asked for
	// and once (below): as many parts as clouds asking, none when none
	// asks.
	if len(linked) != len(asked) {
		t.Errorf("cloudsvm.Followers lists %d parts (%v), the clouds' boots ask for %d (%v)", len(linked), linked, len(asked), asked)
	}
	for name, n := range linked {
		if n != 1 {
			t.Errorf("cloudsvm.Followers lists %q %d times", name, n)
		}
		if asked[name] == "" {
			t.Errorf("cloudsvm.Followers lists %q, which no cloud's boot names", name)
		}
	}
}

// TestTheAgentLinksNoCloudSDK: the agent binary, which links this list,
// links none of the clouds' API modules (their plugins' APIs): a VM-side
// part is small and talks to its VM's metadata service only, and the
// binary is downloaded at every VM's boot.
func TestTheAgentLinksNoCloudSDK(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/egress-proxies/egress/cmd/egress-proxy").Output()
	if err != nil {
		t.Fatalf("go list -deps ./cmd/egress-proxy: %v", err)
	}
	deps := strings.Fields(string(out))
	if !slices.Contains(deps, "github.com/egress-proxies/egress/internal/clouds/cloudsvm") {
		t.Fatalf("go list saw %d packages of cmd/egress-proxy, without internal/clouds/cloudsvm: the walk is blind", len(deps))
	}
	for _, p := range clouds.All {
		for _, api := range p.APIs {
			for _, d := range deps {
				if d == api.Module || strings.HasPrefix(d, api.Module+"/") {
					t.Errorf("the agent links %s, %s's %s", d, p.Type, api.Name)
				}
			}
		}
	}
}
