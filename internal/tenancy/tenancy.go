// Package tenancy says who may do what. Namespaces are the tenants: each
// is a document namespaces/{ns} holding its members (email → role), its
// quota of proxies, and the counter of the proxies it holds, side by side,
// so that a proxy's create reads one document for the namespace's
// existence, its quota and its count. Platform admins (API_ADMINS: emails
// and domain:example.com) act in every namespace and alone create and
// delete namespaces and change quotas.
//
// The roles are ordered: a viewer reads (the namespace, its proxies); an
// editor also creates, deletes, rotates and changes proxies (a PATCH, new
// credentials); an owner also changes the members. Warm pools are the
// platform admins' alone. Permissions is the table the API checks on every
// request.
//
// The package knows no HTTP and no database: the API decides with it, and
// both document stores keep Namespace as it is written here.
package tenancy

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// Role is a member's role in a namespace.
type Role string

// The roles, from the least to the most.
const (
	Viewer Role = "viewer"
	Editor Role = "editor"
	Owner  Role = "owner"
)

// Roles are the roles, from the least to the most.
var Roles = []Role{Viewer, Editor, Owner}

// Valid reports whether r is one of Roles.
func (r Role) Valid() bool { return slices.Contains(Roles, r) }

// AtLeast reports whether r grants everything min grants. The empty role
// (no member) grants nothing.
func (r Role) AtLeast(min Role) bool {
	return r.Valid() && slices.Index(Roles, r) >= slices.Index(Roles, min)
}

// Namespace is one namespace document.
type Namespace struct {
	// Name is the document's id, the namespace's label.
	Name string `firestore:"-"`
	// Members are the callers who have a role in the namespace, by email
	// (lowercase).
	Members map[string]Role `firestore:"members,omitempty"`
	// MemberEmails are the keys of Members, sorted: what a store's query
	// for "the namespaces of this caller" matches on. Index keeps it so.
	MemberEmails []string `firestore:"memberEmails,omitempty"`
	// Quota is how many proxies the namespace may hold; zero (a namespace
	// from before tenancy, whose document was only the counter) is the
	// platform's default.
	Quota int `firestore:"quota,omitempty"`
	// ProxyCount is how many proxy documents the namespace holds, changed
	// in the transaction of each create and delete.
	ProxyCount int64 `firestore:"proxyCount"`
	// ProxyCreates is how many proxy documents were ever created in the
	// namespace, raised in the transaction of each create and never
	// lowered: a create's budget is checked against its namespace's month
	// read outside the transaction (spend.Admit), which holds only while
	// no create committed since it was read, and this says whether one
	// did. A count that only rises, unlike ProxyCount, which a create and
	// a deletion since would leave as it was.
	ProxyCreates int64 `firestore:"proxyCreates,omitempty"`
	// Creations are the times of the VMs the namespace caused within the
	// last hour, oldest first, written in the transaction of each: its
	// users' creates and rotations, its live changes that need a new VM,
	// and its specs' rotations by maxAge. What bounds
	// Limits.CreatesPerHour.
	Creations []time.Time `firestore:"creations,omitempty"`
	// PoolClaims are the times of the warm VMs its proxies claimed within
	// the last hour, by pool, oldest first, written in the transaction of
	// each claim: what bounds a pool's ClaimsPerNamespacePerHour.
	PoolClaims map[string][]time.Time `firestore:"poolClaims,omitempty"`
	// Budget, when set, bounds the namespace's month in money; a platform
	// admin sets it.
	Budget *Budget `firestore:"budget,omitempty"`
	// DeletedSpend is what the namespace's deleted proxies cost, by month
	// ("2006-01"), in nanos of the deployment's currency (COST_CURRENCY):
	// added to in the transaction that removes each proxy's document, so
	// a deleted proxy's spend in the month still counts against the
	// budget. A month's entry is an increment, never a read and a write.
	DeletedSpend map[string]int64 `firestore:"deletedSpend,omitempty"`
	// BudgetAlerts are the budget thresholds the collector told of this
	// month (package budgetalert); nil before the first.
	BudgetAlerts *BudgetAlerts `firestore:"budgetAlerts,omitempty"`
	// TrafficStopped, when set, says the namespace's month reached its
	// budget and its budget stops traffic there (StopTraffic): its
	// proxies' engines refuse new connections until the month turns or
	// the budget is raised. The collector's tick writes and clears it
	// (StopFor); the reconciler hands it to each proxy's VM.
	TrafficStopped *TrafficStopped `firestore:"trafficStopped,omitempty"`
	// CreateTime is when an admin created the namespace.
	CreateTime time.Time `firestore:"createTime,omitempty"`
	// UpdateTime is the document's update time as the store reports it.
	UpdateTime time.Time `firestore:"-"`
}

// RoleOf returns the role of email in the namespace, or "" when it is no
// member (or there is no namespace).
func (ns *Namespace) RoleOf(email string) Role {
	if ns == nil || email == "" {
		return ""
	}
	return ns.Members[strings.ToLower(email)]
}

// HasOwner reports whether any member of members is an owner.
func HasOwner(members map[string]Role) bool {
	for _, r := range members {
		if r == Owner {
			return true
		}
	}
	return false
}

// KeepsOwner is the rule that a namespace keeps an owner: a change of its
// members from before to after may not leave it without one, or only an
// admin could manage it again. A namespace with no owner before (one
// created with no members, or from before tenancy) may stay so only while
// it has no members at all: members are added with an owner among them.
func KeepsOwner(before, after map[string]Role) bool {
	return HasOwner(after) || (!HasOwner(before) && len(after) == 0)
}

// QuotaOr is the namespace's quota, or def when it has none of its own.
func (ns *Namespace) QuotaOr(def int) int {
	if ns == nil || ns.Quota <= 0 {
		return def
	}
	return ns.Quota
}

// Index sets MemberEmails from Members. Every store calls it before it
// writes a namespace.
func (ns *Namespace) Index() {
	ns.MemberEmails = slices.Sorted(maps.Keys(ns.Members))
	if len(ns.MemberEmails) == 0 {
		ns.MemberEmails = nil
	}
}

// Clone is a deep copy.
func (ns *Namespace) Clone() *Namespace {
	c := *ns
	c.Members = maps.Clone(ns.Members)
	c.MemberEmails = slices.Clone(ns.MemberEmails)
	c.Creations = slices.Clone(ns.Creations)
	if ns.Budget != nil {
		b := *ns.Budget
		c.Budget = &b
	}
	c.DeletedSpend = maps.Clone(ns.DeletedSpend)
	if ns.BudgetAlerts != nil {
		a := *ns.BudgetAlerts
		a.Notified = slices.Clone(a.Notified)
		c.BudgetAlerts = &a
	}
	if ns.TrafficStopped != nil {
		t := *ns.TrafficStopped
		c.TrafficStopped = &t
	}
	if ns.PoolClaims != nil {
		c.PoolClaims = make(map[string][]time.Time, len(ns.PoolClaims))
		for pool, ts := range ns.PoolClaims {
			c.PoolClaims[pool] = slices.Clone(ts)
		}
	}
	return &c
}

// Limits bound what a namespace's users make: the proxies it holds, and
// how often they cause VMs, which cost money and spend the Compute quotas
// every namespace shares. The stores hold a create, a rotation or a live
// change to them in its own transaction.
type Limits struct {
	// Quota is how many proxies the namespace may hold (creates only).
	Quota int
	// CreatesPerHour bounds the VMs the namespace causes in any hour;
	// zero bounds none. Every VM that follows from its users' actions or
	// its specs counts: creates, rotations, live changes that need a new
	// VM, rotations by maxAge (counted by the reconciler), and so the warm
	// VMs its proxies claim, each the VM of one of those. VMs the
	// reconciler replaces because they were lost, stopped or failed to
	// boot are never counted nor refused.
	CreatesPerHour int
	// RotateMinInterval is the least time between two VMs a user asks
	// for one proxy (rotations, and live changes that need a new VM);
	// zero, none.
	RotateMinInterval time.Duration
	// InPlace reports whether a VM of the provider type takes a live
	// change (a PATCH, new credentials) without being replaced: its
	// provider can reconfigure a VM (provider.Reconfigurer). A live change
	// of any other proxy's VM, or of one whose spec brings its own
	// cloud-init, makes a new VM, held to RotateMinInterval and counted in
	// CreatesPerHour. Nil takes every live change as made in place.
	InPlace func(providerType string) bool
}

// Admission decides, inside the transaction of a proxy's create, whether
// the proxy may be created in ns as the transaction read it (nil when the
// namespace does not exist), and under which limits. Its error aborts the
// create and is returned as it is.
type Admission func(ns *Namespace) (Limits, error)

// Errors about namespaces, shared by the stores and the API.
var (
	// ErrNamespaceNotFound: there is no such namespace.
	ErrNamespaceNotFound = errors.New("namespace not found")
	// ErrNamespaceExists: a namespace of that name exists.
	ErrNamespaceExists = errors.New("namespace already exists")
	// ErrNamespaceNotEmpty: the namespace holds proxies, so it cannot go.
	ErrNamespaceNotEmpty = errors.New("namespace holds proxies")
)

// NormalizeEmail returns the email in lowercase if it is one: a local part
// and a domain around one '@', neither empty, with no spaces.
func NormalizeEmail(s string) (string, bool) {
	local, domain, ok := strings.Cut(strings.ToLower(strings.TrimSpace(s)), "@")
	if !ok || local == "" || domain == "" || strings.ContainsAny(local+domain, "@ \t\r\n,") {
		return "", false
	}
	return local + "@" + domain, true
}

// Admins are the platform admins: emails, and whole domains.
type Admins struct {
	emails, domains []string
}

// ParseAdmins reads API_ADMINS: comma-separated emails and
// domain:example.com entries. An empty list has no admins.
func ParseAdmins(s string) (Admins, error) {
	var a Admins
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		switch d, isDomain := strings.CutPrefix(f, "domain:"); {
		case f == "":
		case isDomain:
			if _, ok := NormalizeEmail("x@" + d); !ok || strings.Contains(d, "@") {
				return Admins{}, fmt.Errorf("holds %q, which is not domain:DOMAIN", f)
			}
			a.domains = append(a.domains, strings.ToLower(d))
		default:
			e, ok := NormalizeEmail(f)
			if !ok {
				return Admins{}, fmt.Errorf("holds %q, which is neither an email nor domain:DOMAIN", f)
			}
			a.emails = append(a.emails, e)
		}
	}
	return a, nil
}

// Contains reports whether email is an admin's.
func (a Admins) Contains(email string) bool {
	e, ok := NormalizeEmail(email)
	if !ok {
		return false
	}
	_, domain, _ := strings.Cut(e, "@")
	return slices.Contains(a.emails, e) || slices.Contains(a.domains, domain)
}

// String is the list as API_ADMINS gives it.
func (a Admins) String() string {
	out := slices.Clone(a.emails)
	for _, d := range a.domains {
		out = append(out, "domain:"+d)
	}
	return strings.Join(out, ",")
}

// Equal reports whether a and b name the same admins, in the same order.
func (a Admins) Equal(b Admins) bool { return a.String() == b.String() }
