package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"

	"github.com/egress-proxies/egress/internal/vm/vmconfig"
)

// A Follower is a cloud's VM-side part: what a VM of that cloud runs for
// its life beside the apply, where the cloud needs the VM's own doing
// (a DigitalOcean reserved IP leaves only through a route the Droplet
// sets). The boot's setting vmconfig.KeyFollow names the part and the
// URL it reads; `egress-proxy agent -follow` (the bootstrap's
// egress-follow.service) finds it among the parts the binary links
// (FollowerOf) and runs it. The agent defines the seam and names no
// cloud: each part lives in its cloud's folder and imports no cloud SDK
// (the agent binary is small and runs on the VM), and the one list of
// them is internal/clouds/cloudsvm.
type Follower interface {
	// Name is the part's name in the setting.
	Name() string
	// Follow follows url until ctx ends, with what env gives. When what
	// it waited for never came and there is nothing more to do, it
	// returns an error that wraps ErrGaveUp: the VM serves on as it is
	// and the unit is not restarted.
	Follow(ctx context.Context, url string, env FollowEnv) error
}

// FollowEnv is what the agent gives a Follower: the VM's seams.
type FollowEnv struct {
	// Client asks the cloud's metadata service.
	Client *http.Client
	// IP runs ip(8).
	IP IPFunc
	// Report says, in the readiness file, the address the VM's traffic
	// leaves from, "" for its own (Boot.Egress), which the control
	// plane reads beside the readiness.
	Report func(ctx context.Context, egress string) error
	Log    *slog.Logger
}

// IPFunc runs ip(8) with args and returns what it printed: the seam
// between a Follower and the kernel's routes.
type IPFunc func(ctx context.Context, args ...string) ([]byte, error)

// ErrGaveUp is what a Follower's error wraps when what it waited for
// never came: it logs, and its unit ends as done.
var ErrGaveUp = errors.New("agent: the follower gave up")

// FollowerOf finds the part the setting vmconfig.KeyFollow names among
// known, and the URL it reads. A setting that names a part this binary
// does not link is an error naming the setting and the parts it knows:
// the control plane rendered a boot for another build of the agent.
func FollowerOf(known []Follower, setting string) (Follower, string, error) {
	name, url, err := vmconfig.ParseFollow(setting)
	if err != nil {
		return nil, "", err
	}
	var names []string
	for _, f := range known {
		if f.Name() == name {
			return f, url, nil
		}
		names = append(names, f.Name())
	}
	slices.Sort(names)
	return nil, "", fmt.Errorf("agent: the setting %s names %q, which is none of the VM-side parts this agent links (%s)",
		vmconfig.KeyFollow, name, strings.Join(names, ", "))
}
