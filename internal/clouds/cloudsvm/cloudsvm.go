// Package cloudsvm is the VM side's one list of the clouds' VM-side
// parts: what the agent binary (cmd/egress-proxy) links of each cloud
// whose VMs need their own doing beyond the cloud-init boot, each an
// agent.Follower in its cloud's folder that imports no cloud SDK. The
// boot's setting egress-follow (the plugin's Boot.Follow) names the
// part a VM runs. It is the VM side's counterpart of internal/clouds.
package cloudsvm

import (
	"github.com/egress-proxies/egress/internal/provider/digitalocean/dovm"
	"github.com/egress-proxies/egress/internal/vm/agent"
)

// Followers are the VM-side parts the agent knows, one line per cloud.
var Followers = []agent.Follower{
	dovm.Follower,
}
