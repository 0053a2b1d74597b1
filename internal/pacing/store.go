package pacing

import (
	"context"
	"errors"
	"maps"
	"sync"
)

// Shard names one shard of a budget.
type Shard struct {
	Key   Key
	Index int
}

// Counts are a shard's booked calls by window: the window's index since
// the Unix epoch, in windows of the budget's rate, to its calls.
type Counts map[int64]int

// Store keeps the budgets' shards. Two implementations pass the same
// contract (package pacingtest): Firestore's (internal/store, one
// document a shard) for the fleet, and Memory for the simulation and the
// tests.
type Store interface {
	// Update reads shard's counts and, when change says write, stores
	// the counts it returns in their place, atomically: no other
	// Update of the same shard, from any process, comes between the
	// read and the write (a transaction, or a write on the condition
	// that the shard is as read). A shard never written reads as empty.
	// change gets a copy it may keep; it may run more than once (the
	// store reads again when another write came between), so it must
	// decide from its argument alone, and the last run's answer is the
	// one stored. An error is the store's, naming the shard; nothing
	// was written then; one that wraps ErrContended says that other
	// callers kept winning the shard, and another shard may be asked.
	Update(ctx context.Context, shard Shard, change func(Counts) (Counts, bool)) error
}

// ErrContended is a Store's error for a shard that other callers kept
// writing between its reads and its writes, past its retries: the shard
// may have room, and the caller asks another.
var ErrContended = errors.New("the shard is contended")

// Memory is a Store in the process's memory: one budget shared by the
// goroutines of one process (the simulation's function instances, the
// tests'). It is safe for concurrent use.
type Memory struct {
	mu     sync.Mutex
	shards map[Shard]Counts
	writes int
}

// NewMemory is an empty Memory.
func NewMemory() *Memory { return &Memory{shards: map[Shard]Counts{}} }

// Update runs change under the store's lock.
func (m *Memory) Update(ctx context.Context, shard Shard, change func(Counts) (Counts, bool)) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	c := maps.Clone(m.shards[shard])
	if c == nil {
		c = Counts{}
	}
	next, write := change(c)
	if write {
		m.shards[shard] = maps.Clone(next)
		m.writes++
	}
	return nil
}

// Writes is how many Updates wrote.
func (m *Memory) Writes() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.writes
}
