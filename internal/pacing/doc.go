// Package pacing is one budget of calls per cloud account for the whole
// fleet: every function instance that calls a cloud account reserves its
// calls in the same budget, kept in the store, so that the account's rate
// limit (Compute's 1,500 a minute, Hetzner's 3,600 an hour, …) holds
// across all instances in steady state, and a burst of proxies waits in
// line as "queued: N calls ahead" instead of spending the limit and being
// refused by the cloud. The cloud's own refusal stays the final word: it
// is retried after its reset like a queued call.
//
// Why the store: Google Cloud has no emulator of Cloud Tasks (the queue
// with a dispatch rate that would otherwise fit), and Firestore is
// already every function's, with an emulator. Why shards: a Firestore
// document takes about one write a second sustained, and an account's
// budget is spent at up to tens of calls a second, so it is kept in S
// shard documents (Shards), each owning an equal part of every window's
// calls, each written well under once a second. Firestore's store reads
// a shard and writes it on the condition that nothing wrote it since, not
// in a transaction, whose read locks the shard: two instances that both
// wrote a shard they had both read waited on each other's lock for
// seconds, and every reservation that asked the shard meanwhile waited
// behind them.
//
// The algorithm. Time is cut into windows of the cloud's (Rate.Window,
// aligned to the Unix epoch: Compute's minute starts at the minute). Each
// shard holds the calls reserved in the current window and the next few
// (Counts, window index → calls; past windows are pruned in the same
// write). A reservation books in one shard: the earliest window, at most
// MaxAhead ahead, whose share has room for the call's cost, and in it
// the call's slot, spread by its position (window start + k/share ×
// window), so a window's calls are not a burst at its start. The shard
// the instance last booked in is asked first (so that instances seldom
// meet on a shard), and its slot is booked when it is due (within the
// Guard's time of now). Otherwise it is only noted, and the other shards
// are asked in the order of the earliest slot each had when this pacer
// last read it (a shard never read first), until one is due, or no
// shard left had a slot earlier than the earliest noted (what others
// book makes a shard's slot later, never earlier), or Probes were
// noted; then the earliest noted is booked, or, when another caller took
// it meanwhile, the shards are asked once more. So a call is not booked
// a spacing (Window/share: 2 s on Compute) after free slots of other
// shards, which at the end of a burst is time its calls did not need.
// The time is read in each try of the shard's update, no slot is booked
// in its window's last moment (Guard), and a slot whose window ended
// before its call could go is booked again (Pacer.Lost): a call is
// counted in the window it reaches the cloud in. One process has
// InFlight reservations in the store at once: its callers would
// otherwise race each other for the same shards. A slot near enough
// (Options.Near) is written and the caller sleeps until it; a farther one
// is not written (so no slot is ever held for a caller that does not
// come back) and the call fails as provider.KindRateLimited, its
// RetryAfter bringing the caller back when its turn is near, with the
// calls booked ahead of it. A shard with no room sends the caller to
// another; only when every shard is full within MaxAhead windows is the
// account full.
//
// What holds: the shares of a window add up to the account's rate, and a
// shard's update never books past its share, so no window ever
// holds more than the rate, whatever the number of instances
// (pacingtest.Run checks it on every Store, Firestore's under the
// emulator).
//
// Provider is the decorator the composition root (internal/app) puts
// around every provider it registers, with the budget of the provider's
// type and account (Key) and the cost of each method in cloud requests
// (Calls), both declared by the cloud's plugin.
package pacing
