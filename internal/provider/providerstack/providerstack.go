// Package providerstack is what a cloud brings to the local stack's
// end-to-end test (dev/localstack's TestEndToEnd): its fake, started for
// the stack, and its flow, which drives the running stack and reads the
// fake with the cloud's own client or tool. A cloud's <cloud>sim package
// brings its Cloud, internal/clouds/cloudsdev lists it, and the stack's
// test starts each listed cloud's fake beside the mock, enables the
// cloud, and runs its flow as TestEndToEnd/Flows/NAME: the stack's test
// names no cloud. The package is the contract between the two, as
// providerbench is make bench's, so that neither imports the other.
package providerstack

import (
	"testing"
	"time"
)

// Cloud is a cloud's part of the stack's end-to-end test, made by New.
type Cloud interface {
	// Type is the cloud's provider type, which the stack's PROVIDERS
	// enables.
	Type() string
	// Name is the name of the cloud's flow, its subtest's
	// (TestEndToEnd/Flows/NAME).
	Name() string
	// Start starts the cloud's fake, serving until t ends, each of its
	// VMs booting its engine on a loopback address of its own from the
	// user-data the stack renders. It returns the stack's variables that
	// point the cloud's provider at the fake (NAME=VALUE), and the flow
	// over it, which runs once the stack is up.
	Start(t *testing.T) (env []string, flow Flow)
}

// New is the Cloud of provider type typ whose flow is the subtest name:
// start starts the cloud's fake F until t ends and returns it with the
// stack's variables for it, and flow drives the stack over that fake.
func New[F any](typ, name string, start func(t *testing.T) (F, []string), flow func(t *testing.T, s Stack, fake F)) Cloud {
	return cloud[F]{typ: typ, name: name, start: start, flow: flow}
}

type cloud[F any] struct {
	typ, name string
	start     func(t *testing.T) (F, []string)
	flow      func(t *testing.T, s Stack, fake F)
}

func (c cloud[F]) Type() string { return c.typ }

func (c cloud[F]) Name() string { return c.name }

func (c cloud[F]) Start(t *testing.T) ([]string, Flow) {
	t.Helper()
	fake, env := c.start(t)
	return env, func(t *testing.T, s Stack) { c.flow(t, s, fake) }
}

// Flow drives the running stack on a cloud's fake: proxies of its own
// names, beside the other clouds' flows.
type Flow func(t *testing.T, s Stack)

// Stack is the running stack as a cloud's flow may use it: through the
// built egress CLI, as an editor of Namespace, and by what it logs. The
// stack's collector runs every second (GC_INTERVAL=1s) with a grace
// period of 3 s, and its deployment is provider.DefaultDeployment.
type Stack interface {
	// Namespace is the namespace the flows' proxies are made in.
	Namespace() string
	// CLI runs the egress CLI with args (which name the namespace) and
	// fails t unless it exits 0; it returns what the CLI printed on its
	// standard output.
	CLI(t *testing.T, args ...string) string
	// Create makes with the CLI, in Namespace, the proxy name on cloud
	// typ in region (with the create's further flags, such as
	// --ip-policy Static), allowing this machine, waits until it is Ready
	// at its VM's loopback address, and checks that a request through
	// its proxyURL reaches a local target. It returns the proxy and the
	// target's port.
	Create(t *testing.T, name, typ, region string, flags ...string) (Proxy, int)
	// Accesses are the stack's "proxy access" lines so far.
	Accesses(t *testing.T) []Access
}

// Proxy is a proxy as the CLI prints it (-o json), what a flow checks of
// it.
type Proxy struct {
	Status struct {
		Phase, Endpoint, ProxyURL string
	}
}

// Access is what a flow checks of a "proxy access" line of the stack
// (accesslog.Local): the proxy's labels uid, namespace and name, and the
// line's destination, method and status (never its times).
type Access struct {
	Labels map[string]string
	Line   AccessLine
}

// AccessLine is an access line's request.
type AccessLine struct {
	Method, Host string
	Port, Status int
}

// WaitFor polls cond every 200 ms until it holds, and fails t if it does
// not within d, naming what it waited for.
func WaitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", d, what)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
