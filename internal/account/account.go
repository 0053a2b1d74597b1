// Package account is a cloud account the deployment drives beside its
// default one: a Google Cloud project, an AWS account (a role in it), a
// Hetzner or DigitalOcean project (a token), an Azure subscription. Each
// is a document accounts/{id} that platform admins write (docs/operations/
// accounts.md): its provider type, the settings it sets over the
// deployment's (the cloud's own variables that its plugin marks per
// account, plugin.Var.PerAccount), the regions it serves, its limits and
// its state.
//
// The account "" is the deployment's default: what PROVIDERS and the
// cloud's variables configure. It has no document, serves every region
// the operator's policy allows, and is what a proxy created before
// accounts existed lives in, so a deployment without account documents
// behaves as it did before them.
package account

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/egress-proxies/egress/internal/proxy"
)

// Collection is the Firestore collection of the account documents.
const Collection = "accounts"

// Default is the id of the deployment's default account, which has no
// document.
const Default = ""

// State says whether placement may put new proxies in an account.
type State string

const (
	// Active: placement may put new proxies in the account.
	Active State = "active"
	// Draining: no new proxy goes to the account; the proxies in it stay
	// until they are deleted or replaced, and the collector still lists
	// it, so nothing in it leaks.
	Draining State = "draining"
)

// Account is one document of the accounts collection.
type Account struct {
	// ID is the document's id: an RFC 1123 label, as a proxy's status.account
	// names it. It is the document's name, not a field of it.
	ID string `json:"id" firestore:"-"`
	// Provider is the provider type whose VMs the account holds ("gcp").
	Provider string `json:"provider" firestore:"provider"`
	// Settings are the cloud's variables the account sets over the
	// deployment's, by the variable's own name (GCP_PROJECT): only those
	// its plugin marks per account.
	Settings map[string]string `json:"settings,omitempty" firestore:"settings,omitempty"`
	// Regions are the regions the account serves, in the cloud's words
	// (a placement's region); none serves every region the operator's
	// policy allows.
	Regions []string `json:"regions,omitempty" firestore:"regions,omitempty"`
	// Limits bound what placement puts in the account.
	Limits Limits `json:"limits,omitzero" firestore:"limits,omitempty"`
	// State is Active or Draining.
	State State `json:"state" firestore:"state"`
	// CreateTime and UpdateTime are the store's.
	CreateTime time.Time `json:"createTime" firestore:"createTime"`
	UpdateTime time.Time `json:"updateTime" firestore:"-"`
}

// Limits are what an account holds at most, beside what its cloud says
// (provider.QuotaReader).
type Limits struct {
	// InstancesPerRegion is the most live proxies placement puts in one
	// region of the account, for a cloud whose provider reads no quota
	// (Hetzner's limits show in its console only); 0 is no cap of the
	// account's own. Where the provider reads the cloud's quotas, both
	// hold: the tighter wins.
	InstancesPerRegion int `json:"instancesPerRegion,omitempty" firestore:"instancesPerRegion,omitempty"`
	// CallsPerWindow is the account's budget of API calls per window of
	// its cloud, when it is not the plugin's default (a raised limit);
	// 0 takes the plugin's. The pacer reads it.
	CallsPerWindow int `json:"callsPerWindow,omitempty" firestore:"callsPerWindow,omitempty"`
}

// Serves reports whether the account takes proxies of region: it names
// no region, or names this one.
func (a Account) Serves(region string) bool {
	return len(a.Regions) == 0 || slices.Contains(a.Regions, region)
}

// Violation is one rule an account document breaks: the field, in the
// document's JSON names, and the rule.
type Violation struct {
	Field, Description string
}

// ErrInvalid is what Validate's error wraps.
var ErrInvalid = errors.New("invalid account")

// InvalidError is an account that breaks rules, each a Violation.
type InvalidError struct {
	ID         string
	Violations []Violation
}

func (e *InvalidError) Error() string {
	parts := make([]string, len(e.Violations))
	for i, v := range e.Violations {
		parts[i] = v.Field + ": " + v.Description
	}
	return fmt.Sprintf("account %q: %s", e.ID, strings.Join(parts, "; "))
}

func (e *InvalidError) Unwrap() error { return ErrInvalid }

// PerAccount says, for a provider type, the variables an account of it
// may set, and whether the type is configured at all. The composition
// root answers it from the plugins (plugin.Plugin.PerAccount) and
// PROVIDERS.
type PerAccount func(typ string) (names []string, configured bool)

// typePattern is a provider type's form (provider.Registry's rule).
var typePattern = regexp.MustCompile(`^[a-z][a-z0-9-]{0,31}$`)

// Validate checks an account against the rules of a document: an id that
// is a label, a configured provider type, settings only of the variables
// its plugin marks per account, each non-empty, regions each named once,
// limits not below zero, and a known state. The error is an
// *InvalidError naming every field it breaks, or nil.
func Validate(a Account, perAccount PerAccount) error {
	var vs []Violation
	add := func(field, format string, args ...any) {
		vs = append(vs, Violation{Field: field, Description: fmt.Sprintf(format, args...)})
	}
	if !proxy.IsLabel(a.ID) {
		add("id", "%q is not an RFC 1123 label (1-63 lowercase letters, digits and '-', starting and ending with a letter or digit); the default account has no document", a.ID)
	}
	// names stays nil for a type that is not configured: its settings
	// are then judged by nothing but their values.
	var names []string
	known := false
	if !typePattern.MatchString(a.Provider) {
		add("provider", "%q is not a provider type (a lowercase word such as gcp)", a.Provider)
	} else if names, known = perAccount(a.Provider); !known {
		add("provider", "%q is not among the configured provider types (PROVIDERS)", a.Provider)
	}
	for _, k := range sortedKeys(a.Settings) {
		switch {
		case known && !slices.Contains(names, k):
			add("settings."+k, "is not a variable an account of %s may set: those are %s", a.Provider, listOrNone(names))
		case strings.TrimSpace(a.Settings[k]) == "":
			add("settings."+k, "is empty: leave the variable out to take the deployment's value")
		}
	}
	if known && len(names) > 0 && len(a.Settings) == 0 {
		// The deployment's own account under a second name: the
		// collector would list its VMs twice, and take each as the other
		// account's orphan.
		add("settings", "sets none of %s: an account that sets none is the deployment's own account, whose VMs the collector would take for another account's", listOrNone(names))
	}
	seen := map[string]bool{}
	for i, r := range a.Regions {
		switch {
		case strings.TrimSpace(r) == "":
			add(fmt.Sprintf("regions[%d]", i), "is empty")
		case seen[r]:
			add(fmt.Sprintf("regions[%d]", i), "%q is named twice", r)
		}
		seen[r] = true
	}
	if a.Limits.InstancesPerRegion < 0 {
		add("limits.instancesPerRegion", "%d is below 0 (0 is no cap of the account's own)", a.Limits.InstancesPerRegion)
	}
	if a.Limits.CallsPerWindow < 0 {
		add("limits.callsPerWindow", "%d is below 0 (0 takes the cloud's default)", a.Limits.CallsPerWindow)
	}
	if a.State != Active && a.State != Draining {
		add("state", "%q is neither %q nor %q", a.State, Active, Draining)
	}
	if len(vs) == 0 {
		return nil
	}
	return &InvalidError{ID: a.ID, Violations: vs}
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func listOrNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}
