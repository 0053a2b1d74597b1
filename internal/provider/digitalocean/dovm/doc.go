// Package dovm is DigitalOcean's VM-side part: what a Droplet's agent
// runs beside the apply, where the cloud needs the Droplet's own doing.
// A Static proxy's Droplet routes its outbound IPv4 through its reserved
// IP's anchor gateway once the address is assigned (Anchor, anchor.go),
// following DigitalOcean's metadata document, and says so in its
// readiness file.
//
// It is linked into the agent binary (cmd/egress-proxy) by the VM side's
// one list, internal/clouds/cloudsvm, as the agent.Follower named Name,
// which the boot's setting vmconfig.KeyFollow asks for (the digitalocean
// plugin's Boot.Follow). It imports neither godo nor the provider's
// package: the agent is small and runs on the VM, and the control plane
// links none of this.
package dovm

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/egress-proxies/egress/internal/vm/agent"
)

// Name is the part's name in the setting vmconfig.KeyFollow: the
// cloud's provider type, which the digitalocean plugin's Boot.Follow
// names (internal/clouds/cloudsvm's test holds the two together).
const Name = "digitalocean"

// Follower is the part the agent runs: Anchor on the metadata document
// at the setting's URL, at Anchor's own pace.
var Follower agent.Follower = Part{}

// Part is the agent.Follower that runs Anchor; its fields, zero in
// Follower, are Anchor's pace (Anchor.Poll, Wait, Recheck and Sleep),
// which tests set.
type Part struct {
	Poll, Wait, Recheck time.Duration
	Sleep               func(ctx context.Context, d time.Duration) error
}

// Name is Name.
func (Part) Name() string { return Name }

// Follow runs Anchor until ctx ends; no reserved IP within its wait is
// the agent's ErrGaveUp: the control plane replaces a Static proxy's
// Droplet that never says it leaves from its address, and restarting
// the unit would not bring the address.
func (p Part) Follow(ctx context.Context, url string, env agent.FollowEnv) error {
	a := &Anchor{URL: url, Client: env.Client, IP: env.IP, Report: env.Report, Log: env.Log,
		Poll: p.Poll, Wait: p.Wait, Recheck: p.Recheck, Sleep: p.Sleep}
	err := a.Run(ctx)
	if errors.Is(err, ErrNoReservedIP) {
		return fmt.Errorf("%w: %w", agent.ErrGaveUp, err)
	}
	return err
}
