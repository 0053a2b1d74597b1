package plugin

import (
	"fmt"
	"strings"

	"github.com/egress-proxies/egress/internal/proxy"
)

// A cloud's configuration variables: what it declares of each (Var), who
// reads it (Readers), the values as read (Settings), and the checks the
// clouds' variables share.

// Readers are the functions of the house that read a variable, as a set.
type Readers uint8

const (
	// ReadByAPI is the ProxyAPI, which holds a spec to the cloud's rules.
	ReadByAPI Readers = 1 << iota
	// ReadByCallers are the functions that call the provider (Create,
	// Get, Delete, ListByTag): Reconcile and CollectGarbage.
	ReadByCallers
)

// Var is one of a cloud's configuration variables: the one place its
// name, default, meaning and readers are written down. The house's table
// (internal/app.Vars) holds it beside the house's own, and the
// configuration reference and deploy/terraform are checked against it.
type Var struct {
	Name string
	// Default is the value used when the variable is unset or empty, in
	// the variable's own syntax; "" means there is none (or it is
	// derived, as DefaultDoc says).
	Default string
	// DefaultDoc is the default as the docs give it, when Default alone
	// does not say it ("every location").
	DefaultDoc string
	// LocalDefault is the default `make run` gives the variable, when it
	// is not Default.
	LocalDefault string
	Meaning      string
	Readers      Readers
	// Local marks a variable only the local stack and tests set:
	// production (Terraform) never sets it.
	Local bool
	// Required variables have no default; unset, they stop the start-up.
	Required bool
	// PerAccount marks a variable an account document (internal/account)
	// may set for its own provider, over the deployment's value: what
	// names the account to the cloud (a project, a token's secret, a
	// role, a subscription) and what lives inside it. Every other
	// variable is the deployment's, the same in every account, and an
	// account that sets one is refused.
	PerAccount bool
	// Check refuses a value (the default, when the variable is unset):
	// read holds the cloud's variables loaded before this one. Its error
	// says what is wrong with the value, in words that follow the
	// variable's name and value ("is not a loopback URL …"); the loader
	// adds both. Nil accepts any value.
	Check func(value string, read Settings) error
}

// PerAccount is the names of p's variables an account may set
// (Var.PerAccount), in declaration order.
func (p Plugin) PerAccount() []string {
	var names []string
	for _, v := range p.Vars {
		if v.PerAccount {
			names = append(names, v.Name)
		}
	}
	return names
}

// Over is s with overrides set over it, as a new Settings: an account's
// settings over the deployment's. s is not changed.
func (s Settings) Over(overrides map[string]string) Settings {
	out := make(Settings, len(s)+len(overrides))
	for k, v := range s {
		out[k] = v
	}
	for k, v := range overrides {
		out[k] = v
	}
	return out
}

// Settings are a cloud's variables as the process read them, by name:
// each variable its readers read, with its default when unset. A
// variable of another function is absent, so its Get is "".
type Settings map[string]string

// Get is the value of the variable name.
func (s Settings) Get(name string) string { return s[name] }

// List is the variable name as a comma-separated list, its items trimmed
// and the empty ones dropped; nil when it is empty.
func (s Settings) List(name string) []string { return SplitList(s[name]) }

// SplitList reads a comma-separated list, as every list variable is
// written.
func SplitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// Checks the variables of several clouds share.

// LoopbackURL refuses an endpoint that is not of this machine: an
// endpoint variable is for a fake, never for another API.
func LoopbackURL(example string) func(string, Settings) error {
	return func(v string, _ Settings) error {
		if v != "" && !strings.HasPrefix(v, "http://127.0.0.1:") && !strings.HasPrefix(v, "http://localhost:") {
			return fmt.Errorf("is not a loopback URL such as %s: it is for a fake on this machine", example)
		}
		return nil
	}
}

// SecretVersion refuses what is not a Secret Manager version.
func SecretVersion(v string) error {
	if v != "" && !proxy.IsSecretVersion(v) {
		return fmt.Errorf("is not a secret version: want projects/PROJECT/secrets/SECRET/versions/VERSION")
	}
	return nil
}
