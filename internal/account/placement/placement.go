// Package placement chooses the account a new proxy's VM goes to, among
// the accounts of its provider type that serve its region: pure logic
// over what the reconciler read of each (its cloud's quotas, its own cap
// and the proxies placed in it), with no store or cloud of its own.
//
// An account has headroom when every limit known of it has room for one
// more VM: the cloud's regional quotas of instances, CPUs and public
// addresses where its provider reads them (provider.QuotaReader), and the
// account's own cap of instances per region (account.Limits) counted
// against the proxies placed in it. A limit nobody knows bounds nothing:
// the cloud's refusal of the create is then the final word, and the
// reconciler retries it later, as it does a quota error.
//
// Among the accounts with headroom, the choice is the highest rendezvous
// hash of the proxy's uid and the account's id: the fleet spreads evenly
// over the accounts (each account's budget of API calls and its quotas
// serve their share of a burst), no count of the default account is
// needed (its proxies carry no account to count by), and the same proxy
// asked again with the same accounts gets the same answer, so a retried
// placement does not wander between accounts.
package placement

import (
	"errors"
	"fmt"
	"hash/fnv"
	"strings"

	"github.com/egress-proxies/egress/internal/provider"
)

// Candidate is one account as placement weighs it.
type Candidate struct {
	// ID is the account's id; "" the deployment's default.
	ID string
	// Quotas are its cloud's regional quotas as read now, nil where its
	// provider reads none (or the read failed).
	Quotas *provider.Quotas
	// Cap is the account's own cap of instances in the region
	// (account.Limits.InstancesPerRegion), 0 for none, and Placed the
	// proxies placed in it there, which only a Cap is held against.
	Cap, Placed int
	// Unavailable, when set, says why the account takes no proxy now
	// (its provider cannot be made): it has no headroom.
	Unavailable string
}

// Unbounded is the headroom of an account with no known limit.
const Unbounded = -1

// Headroom is how many more VMs the candidate's known limits allow, the
// least of them, or Unbounded when none is known.
func (c Candidate) Headroom() int {
	if c.Unavailable != "" {
		return 0
	}
	room := Unbounded
	take := func(free int) {
		if free >= 0 && (room == Unbounded || free < room) {
			room = free
		}
	}
	if c.Quotas != nil {
		take(c.Quotas.Instances.Free())
		take(c.Quotas.CPUs.Free())
		take(c.Quotas.Addresses.Free())
	}
	if c.Cap > 0 {
		take(max(c.Cap-c.Placed, 0))
	}
	return room
}

// why says what fills a candidate without headroom, for the proxy's
// message.
func (c Candidate) why() string {
	var full []string
	if c.Unavailable != "" {
		full = append(full, c.Unavailable)
	}
	if q := c.Quotas; q != nil {
		for _, l := range []struct {
			name string
			q    provider.Quota
		}{{"instances", q.Instances}, {"CPUs", q.CPUs}, {"addresses", q.Addresses}} {
			if l.q.Free() == 0 {
				full = append(full, fmt.Sprintf("%d of %d %s in use (the cloud's quota)", l.q.Usage, l.q.Limit, l.name))
			}
		}
	}
	if c.Cap > 0 && c.Placed >= c.Cap {
		full = append(full, fmt.Sprintf("%d proxies placed, its cap is %d", c.Placed, c.Cap))
	}
	return fmt.Sprintf("%s: %s", Name(c.ID), strings.Join(full, ", "))
}

// Name is how a message names an account: the default one by that word.
func Name(id string) string {
	if id == "" {
		return "the default account"
	}
	return fmt.Sprintf("account %q", id)
}

// ErrNoHeadroom is what Choose's error wraps when no candidate has room.
var ErrNoHeadroom = errors.New("no account has headroom")

// Choose is the account the proxy of uid goes to among candidates: the
// one with headroom whose rendezvous hash with uid is highest. With none,
// its error wraps ErrNoHeadroom and says what fills each candidate; with
// no candidate at all, it says so.
func Choose(uid string, candidates []Candidate) (string, error) {
	if len(candidates) == 0 {
		return "", fmt.Errorf("%w: none is active and serves the region", ErrNoHeadroom)
	}
	best, found := "", false
	var bestScore uint64
	var full []string
	for _, c := range candidates {
		if c.Headroom() == 0 {
			full = append(full, c.why())
			continue
		}
		if s := score(uid, c.ID); !found || s > bestScore || (s == bestScore && c.ID < best) {
			best, bestScore, found = c.ID, s, true
		}
	}
	if !found {
		return "", fmt.Errorf("%w: %s", ErrNoHeadroom, strings.Join(full, "; "))
	}
	return best, nil
}

// score is the rendezvous hash of a proxy's uid and an account's id.
func score(uid, id string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(uid))
	h.Write([]byte{0})
	h.Write([]byte(id))
	return mix(h.Sum64())
}

// mix spreads FNV's output (whose high bits move little for inputs that
// differ in their last bytes) over all 64 bits: splitmix64's finalizer.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}
