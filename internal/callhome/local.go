package callhome

import (
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Each Reconcile instance keeps, in memory, a bucket per VM of the same
// size and rate as the VM's bucket in the store, and spends a message's
// token there first. The instance sees a part of the VM's messages (Cloud
// Run spreads them over instances), so its bucket is empty only when the
// store's is too: a message it refuses is one the store's bucket would
// have refused, now without that bucket's document read. A flood from
// one VM then costs each instance that takes it one invocation per
// message, Burst reads, and one read per Interval after that; nothing
// bounds the invocations themselves but the publisher's own rate and
// Reconcile's instances (docs/concepts/security.md says the worst case).

// maxLocalBuckets bounds the memory of the local buckets: when as many
// VMs have one, they are forgotten together, and each starts full again,
// which the store's bucket still bounds.
const maxLocalBuckets = 10_000

// localBuckets are one instance's buckets, by VM.
type localBuckets struct {
	mu sync.Mutex
	by map[string]*rate.Limiter
}

// allow takes a token from vm's bucket at now; false when it is empty.
func (l *localBuckets) allow(vm string, now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.by == nil || len(l.by) >= maxLocalBuckets {
		l.by = map[string]*rate.Limiter{}
	}
	b, ok := l.by[vm]
	if !ok {
		b = rate.NewLimiter(rate.Every(Interval), Burst)
		l.by[vm] = b
	}
	return b.AllowN(now, 1)
}
