package app

// Scale is how a function is deployed: at most MaxInstances instances, each
// serving up to Concurrency requests at once. deploy/terraform sets these
// numbers (a deploy test holds the two equal), and the local stack caps
// each function at InFlight requests, so the benchmark measures what
// production would do.
type Scale struct {
	MaxInstances, Concurrency int
}

// InFlight is the most requests the function serves at once.
func (s Scale) InFlight() int { return s.MaxInstances * s.Concurrency }

// Deployed is each function's scale.
//
// No run waits for a boot, so a ProxyAPI request or a Reconcile run spends
// its time waiting on Firestore, Pub/Sub and Compute: tens of milliseconds,
// with the CPU idle. One instance (1 vCPU) therefore serves many at once;
// the instance counts bound what a burst costs and how hard it can push on
// Compute's API rate limits, where the real ceiling is. A Reconcile run
// that waits for a VM to go (deletion, replacement) holds its slot for up
// to its wait budget, a minute; 400 slots leave room for hundreds of those.
// CollectGarbage runs alone: two collections at once only do the same work
// twice.
var Deployed = map[Function]Scale{
	ProxyAPI:       {MaxInstances: 10, Concurrency: 40},
	Reconcile:      {MaxInstances: 20, Concurrency: 20},
	CollectGarbage: {MaxInstances: 1, Concurrency: 1},
}
