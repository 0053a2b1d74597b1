package reconcile

import (
	"context"
	"sync"
	"time"

	"github.com/egress-proxies/egress/internal/provider"
)

// DefaultQuotaTTL is how long placement uses an account's regional quotas
// as read (Options.QuotaTTL), counting meanwhile the proxies this process
// placed there. Placement weighs every candidate account for every new
// proxy, so reading each one's quotas each time cost a burst of N
// proxies over A accounts N×A reads of the cloud, each spent from the
// account's budget of calls: a burst of 120 over two Compute projects
// read regions.get 240 times besides its 240 creates and gets, and its
// reads were refused past the project's read quota (the bench's burst
// phase). A read a minute an account and region and process is a small
// part of any cloud's rate; a quota is a count that changes with the
// fleet's own creates, which the cache counts, and with others' (another
// process's placements, another deployment's VMs), which it sees at the
// next read. The cloud's refusal of a create (KindQuota) stays the final
// word, as for a cloud that reads no quota.
const DefaultQuotaTTL = time.Minute

// quotaKey names one account's quotas in one region.
type quotaKey struct{ typ, account, region string }

// quotaRead is one read of an account's quotas: in flight until done is
// closed, then its answer, and the proxies placed in the account's
// region since.
type quotaRead struct {
	done   chan struct{}
	at     time.Time
	quotas provider.Quotas
	err    error
	placed int
}

// quotaCache keeps the quotas placement read, per account and region, in
// one process. Callers that ask while a read is in flight share it: a
// burst's first proxies, placed at once, make one read an account. A
// failed read is not kept. It is safe for concurrent use.
type quotaCache struct {
	mu    sync.Mutex
	reads map[quotaKey]*quotaRead
}

// quotaWaitStep is how often a caller waiting for another's read of an
// account's quotas looks again.
const quotaWaitStep = 20 * time.Millisecond

// get is key's quotas as read less than ttl before now, with each proxy
// placed there since counted as one more instance and one more address in
// use (a proxy's VM holds an external address; its CPUs depend on its
// machine type, which the cloud's next read counts); read reads them
// when there is no such read. The error is the read's.
//
// A caller that finds the read in flight waits for it in steps of
// quotaWaitStep on the reconciler's clock (sleep), not on the read's
// channel alone: under the simulation, which runs one invocation at a
// time and lets another run only while one sleeps on its clock, a wait
// on the channel would hold the schedule while the reader, parked on the
// same clock (its budget's turn), could never finish.
func (c *quotaCache) get(ctx context.Context, key quotaKey, now time.Time, ttl time.Duration, sleep func(context.Context, time.Duration) error, read func(context.Context) (provider.Quotas, error)) (provider.Quotas, error) {
	c.mu.Lock()
	if c.reads == nil {
		c.reads = map[quotaKey]*quotaRead{}
	}
	r := c.reads[key]
	if r != nil {
		select {
		case <-r.done:
			if r.err != nil || now.Sub(r.at) >= ttl {
				r = nil
			}
		default:
			// In flight: share it.
		}
	}
	if r == nil {
		r = &quotaRead{done: make(chan struct{}), at: now}
		c.reads[key] = r
		c.mu.Unlock()
		q, err := read(ctx)
		c.mu.Lock()
		r.quotas, r.err = q, err
		close(r.done)
	} else {
		c.mu.Unlock()
		for waiting := true; waiting; {
			select {
			case <-r.done:
				waiting = false
			default:
				if err := sleep(ctx, quotaWaitStep); err != nil {
					return provider.Quotas{}, err
				}
			}
		}
		c.mu.Lock()
	}
	defer c.mu.Unlock()
	if r.err != nil {
		return provider.Quotas{}, r.err
	}
	q := r.quotas
	q.Instances.Usage += r.placed
	q.Addresses.Usage += r.placed
	return q, nil
}

// placed counts a proxy placed in key's account and region against the
// quotas last read there.
func (c *quotaCache) placed(key quotaKey) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := c.reads[key]
	if r == nil {
		return
	}
	select {
	case <-r.done:
		if r.err == nil {
			r.placed++
		}
	default:
	}
}
