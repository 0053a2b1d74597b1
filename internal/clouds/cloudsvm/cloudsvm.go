// Package cloudsvm is the VM side's one list of the clouds' VM-side
// parts: what the agent binary (cmd/egress-proxy) links of each cloud
// whose VMs need their own doing beyond the cloud-init boot, each an
// agent.Follower in its cloud's folder that imports no cloud SDK. The
// boot's setting egress-follow (the plugin's Boot.Follow) names the
// part a VM runs. It is the VM side's counterpart of internal/clouds.
//
// The list (clouds_gen.go) is written by make docs (dev/gendocs) from
// each plugin of internal/clouds.All that names its VM-side package
// (plugin.Plugin.VM): no cloud is a hand-written line here. It cannot be
// taken from All at run time, which would link every cloud's SDK into a
// binary each VM downloads.
package cloudsvm

import (
	"slices"

	"github.com/egress-proxies/egress/internal/vm/agent"
)

// Followers are the VM-side parts the agent knows, in
// internal/clouds.All's order.
func Followers() []agent.Follower {
	return slices.Clone(listed)
}
