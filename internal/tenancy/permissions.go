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
	UpdateMembers   Permission = "namespaces.update"
	UpdateQuota     Permission = "namespaces.updateQuota"
	DeleteNamespace Permission = "namespaces.delete"

	ListProxies  Permission = "proxies.list"
	GetProxy     Permission = "proxies.get"
	CreateProxy  Permission = "proxies.create"
	DeleteProxy  Permission = "proxies.delete"
	RotateProxy  Permission = "proxies.rotate"
	ReadProxyURL Permission = "proxies.readProxyURL"
)

// Permissions is who may do what: the least role that grants each
// permission, "" for those only platform admins have. Admins have every
// permission; ListNamespaces is every caller's, and shows each the
// namespaces they are a member of (admins: all).
//
// ReadProxyURL (the credentials in status.proxyURL) is every member's and
// no one else's: an admin who is not a member sees a proxy without them.
var Permissions = map[Permission]Role{
	ListNamespaces:  Viewer,
	CreateNamespace: "",
	GetNamespace:    Viewer,
	UpdateMembers:   Owner,
	UpdateQuota:     "",
	DeleteNamespace: "",
	ListProxies:     Viewer,
	GetProxy:        Viewer,
	CreateProxy:     Editor,
	DeleteProxy:     Editor,
	RotateProxy:     Editor,
	ReadProxyURL:    Viewer,
}

// Allowed reports whether a caller with role in a namespace ("" for none),
// admin or not, has permission p there.
func Allowed(p Permission, admin bool, role Role) bool {
	if p == ReadProxyURL {
		return role.Valid()
	}
	if admin {
		return true
	}
	min, ok := Permissions[p]
	return ok && min != "" && role.AtLeast(min)
}
