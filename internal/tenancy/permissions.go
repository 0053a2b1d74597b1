package tenancy

// Permission is one thing a caller may do. Its name is the action the
// audit line records.
type Permission string

// The permissions, by the resource they act on.
const (
	ListNamespaces  Permission = "namespaces.list"
	CreateNamespace Permission = "namespaces.create"
	GetNamespace    Permission = "namespaces.get"
	// UpdateMembers is a PATCH of a namespace; a PATCH that changes the
	// quota needs UpdateQuota too.
	UpdateMembers Permission = "namespaces.update"
	UpdateQuota   Permission = "namespaces.updateQuota"
	// UpdateBudget is a PATCH that changes the namespace's monthly
	// budget: the platform's money, so the platform admins' alone.
	UpdateBudget    Permission = "namespaces.updateBudget"
	DeleteNamespace Permission = "namespaces.delete"

	ListProxies Permission = "proxies.list"
	GetProxy    Permission = "proxies.get"
	CreateProxy Permission = "proxies.create"
	DeleteProxy Permission = "proxies.delete"
	RotateProxy Permission = "proxies.rotate"
	// UpdateProxy is a PATCH of a proxy's reconfigurable fields (its
	// source ranges and CONNECT ports), applied to its VM live.
	UpdateProxy Permission = "proxies.update"
	// RotateCredentials gives a proxy a new username and password; the
	// old ones stop working once its VM serves the new ones.
	RotateCredentials Permission = "proxies.rotateCredentials"
	ReadProxyURL      Permission = "proxies.readProxyURL"
	// ReadConsoleTail is status.consoleTail: what a Failed proxy's VM
	// printed last.
	ReadConsoleTail Permission = "proxies.readConsoleTail"

	// The warm pools are the platform's, not a namespace's: their VMs
	// cost the deployment whether anyone claims them or not, so only
	// platform admins declare, read and delete them.
	ListPools  Permission = "pools.list"
	GetPool    Permission = "pools.get"
	PutPool    Permission = "pools.put"
	DeletePool Permission = "pools.delete"

	// The cloud accounts (package account) are the platform's too: what
	// an account sets names a project, a token's secret or a role of the
	// deployment's, so only platform admins read and write them.
	ListAccounts  Permission = "accounts.list"
	GetAccount    Permission = "accounts.get"
	PutAccount    Permission = "accounts.put"
	DeleteAccount Permission = "accounts.delete"
)

// Permissions is who may do what: the least role that grants each
// permission, "" for those only platform admins have. Admins have every
// permission; ListNamespaces is every caller's, and shows each the
// namespaces they are a member of (admins: all).
//
// ReadProxyURL (the credentials in status.proxyURL) is an editor's and an
// owner's and no one else's: an admin who is not a member sees a proxy
// without them, and so does a viewer, who reads what the namespace has
// but does not use it (as Kubernetes' view role reads no Secret).
// ReadConsoleTail (the output of the VM's software, which a custom
// cloud-init controls) is an editor's and an owner's, and likewise no
// one else's.
var Permissions = map[Permission]Role{
	ListNamespaces:  Viewer,
	CreateNamespace: "",
	GetNamespace:    Viewer,
	UpdateMembers:   Owner,
	UpdateQuota:     "",
	UpdateBudget:    "",
	DeleteNamespace: "",
	ListProxies:     Viewer,
	GetProxy:        Viewer,
	CreateProxy:     Editor,
	DeleteProxy:     Editor,
	RotateProxy:     Editor,
	ReadProxyURL:    Editor,
	ReadConsoleTail: Editor,

	UpdateProxy:       Editor,
	RotateCredentials: Editor,

	ListPools:  "",
	GetPool:    "",
	PutPool:    "",
	DeletePool: "",

	ListAccounts:  "",
	GetAccount:    "",
	PutAccount:    "",
	DeleteAccount: "",
}

// Allowed reports whether a caller with role in a namespace ("" for none),
// admin or not, has permission p there.
func Allowed(p Permission, admin bool, role Role) bool {
	switch p {
	case ReadProxyURL, ReadConsoleTail:
		// The namespace's own, admins or not.
		return role.AtLeast(Permissions[p])
	}
	if admin {
		return true
	}
	min, ok := Permissions[p]
	return ok && min != "" && role.AtLeast(min)
}
