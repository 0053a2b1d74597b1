package console

import (
	"github.com/egress-proxies/egress/internal/tenancy"
)

// Action is something a person can do in the console: the CLI's command
// that does the same (egress NOUN VERB), which is also the last segment
// of the console's form action, and the API's permission, by which the
// console shows it only to those the API lets do it.
type Action struct {
	// Command is the CLI's: "proxies rotate-credentials".
	Command    string
	Permission tenancy.Permission
}

// Actions are every action of the console.
var Actions = []Action{
	{Command: "namespaces create", Permission: tenancy.CreateNamespace},
	{Command: "namespaces add-member", Permission: tenancy.UpdateMembers},
	{Command: "namespaces remove-member", Permission: tenancy.UpdateMembers},
	{Command: "namespaces set-quota", Permission: tenancy.UpdateQuota},
	{Command: "proxies create", Permission: tenancy.CreateProxy},
	{Command: "proxies update", Permission: tenancy.UpdateProxy},
	{Command: "proxies rotate", Permission: tenancy.RotateProxy},
	{Command: "proxies rotate-credentials", Permission: tenancy.RotateCredentials},
	{Command: "proxies delete", Permission: tenancy.DeleteProxy},
}

// can is what a caller may do in a namespace, by permission name as the
// templates ask ("proxies.create").
type can map[tenancy.Permission]bool

func permissions(admin bool, role tenancy.Role) can {
	c := can{}
	for p := range tenancy.Permissions {
		c[p] = tenancy.Allowed(p, admin, role)
	}
	return c
}

// Do reports whether the caller has the permission named p.
func (c can) Do(p string) bool { return c[tenancy.Permission(p)] }
