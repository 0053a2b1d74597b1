package providerstack

import "testing"

// Accounts is what a cloud brings to the local stack's test of several
// accounts of one cloud (TestEndToEnd/NAME, issue 48): a fake for the
// deployment's default account and one for a second account, which an
// accounts document names, and the flow over both. A cloud's
// <cloud>accounts package brings it (plugin.Plugin.AccountsStack), and
// internal/clouds/cloudsdev lists it: the stack's test names no cloud.
type Accounts interface {
	// Type is the cloud's provider type, which the stack enables.
	Type() string
	// Name is the flow's subtest name (TwoProjects).
	Name() string
	// Start starts both fakes until t ends. It returns the stack's
	// variables, which point the cloud's provider at the default
	// account's fake, the second account as its document sets it, and the
	// flow over both.
	Start(t *testing.T) (env []string, second Account, flow AccountsFlow)
}

// Account is an account document as the stack's test writes it before
// any proxy is placed.
type Account struct {
	// ID is the document's id.
	ID string
	// Settings are the cloud's per-account variables it sets.
	Settings map[string]string
}

// AccountsFlow drives the running stack over the two accounts' fakes.
type AccountsFlow func(t *testing.T, s AccountsStack)

// AccountsStack is the running stack as an accounts flow uses it:
// proxies through the API, in Namespace, as an editor of it.
type AccountsStack interface {
	// Namespace is the namespace the flow's proxies are made in.
	Namespace() string
	// CreateVM creates the proxy name on cloud typ in region and zone,
	// allowing 203.0.113.0/24, and waits until a VM was made for it (its
	// status names a providerID): the fakes' VMs need not serve.
	CreateVM(t *testing.T, name, typ, region, zone string) Placed
	// Delete deletes the proxy name and waits until it is gone.
	Delete(t *testing.T, name string)
}

// Placed is a proxy whose VM was made: its uid, phase, providerID and
// the account its status names ("" the default).
type Placed struct {
	Name, UID, Phase, ProviderID, Account string
}
