package proxy

import (
	"encoding/json"
	"fmt"
	"maps"
	"strings"
	"time"
)

// PoolsCollection holds the warm pools' documents, pools/{pool}; each
// pool's members are proxy documents beneath it, pools/{pool}/proxies/{name}.
const PoolsCollection = "pools"

// PoolPattern is the path pattern of pool documents, as the Firestore
// trigger matches it.
const PoolPattern = "pools/{pool}"

// PoolSpec is what an admin declares of a warm pool: keep Size VMs of the
// provider and placement booted, proven and unclaimed.
type PoolSpec struct {
	Provider  string    `json:"provider" firestore:"provider"`
	Placement Placement `json:"placement" firestore:"placement"`
	Size      int       `json:"size" firestore:"size"`
	// ClaimsPerNamespacePerHour, when positive, is how many VMs the
	// proxies of one namespace may claim from the pool in any hour: past
	// it, they boot VMs of their own, and the pool stays for the others.
	// Zero lets any namespace claim every warm VM.
	ClaimsPerNamespacePerHour int `json:"claimsPerNamespacePerHour,omitempty" firestore:"claimsPerNamespacePerHour,omitempty"`
}

// PoolStatus is what the pool's reconciler last saw and did.
type PoolStatus struct {
	// Warm counts the members whose VM is booted, proven and unclaimed;
	// Booting the unclaimed ones on their way there.
	Warm    int `json:"warm" firestore:"warm"`
	Booting int `json:"booting" firestore:"booting"`
	// ClaimsLastHour counts the VMs proxies claimed from the pool in the
	// last hour; ClaimsLastHourByNamespace, the same by the claiming
	// proxies' namespace (pools are the admins' alone, so only they see
	// it).
	ClaimsLastHour            int            `json:"claimsLastHour" firestore:"claimsLastHour"`
	ClaimsLastHourByNamespace map[string]int `json:"claimsLastHourByNamespace,omitempty" firestore:"claimsLastHourByNamespace,omitempty"`
	// Message says why the pool cannot fill, when it cannot.
	Message string `json:"message,omitempty" firestore:"message,omitempty"`
	// Claims are the claims of the last hour whose member documents are
	// gone, by member name, when each was made: what ClaimsLastHour counts
	// beside the members still claimed. A claimed member's document goes
	// as soon as its proxy relabelled the VM, so that the pool's runs,
	// which read every member, do not read an hour of claims.
	Claims map[string]time.Time `json:"-" firestore:"claims,omitempty"`
	// ClaimNamespaces are the namespaces of Claims' claims, by member
	// name: what ClaimsLastHourByNamespace counts them by. (A map of its
	// own: pools written before it keep Claims as they were.)
	ClaimNamespaces map[string]string `json:"-" firestore:"claimNamespaces,omitempty"`
	// RefillAfter, after a member failed, is when the pool makes new
	// members again: a pool whose members cannot boot (a missing image,
	// a bootstrap that cannot render) would otherwise make and fail them
	// as fast as their events come. The collector's sweep brings the run
	// after it.
	RefillAfter time.Time `json:"-" firestore:"refillAfter,omitempty"`
}

// Equal reports whether two statuses say the same: a status is written
// only when it changed.
func (s PoolStatus) Equal(o PoolStatus) bool {
	return s.Warm == o.Warm && s.Booting == o.Booting && s.ClaimsLastHour == o.ClaimsLastHour &&
		maps.Equal(s.ClaimsLastHourByNamespace, o.ClaimsLastHourByNamespace) &&
		s.Message == o.Message && maps.EqualFunc(s.Claims, o.Claims, time.Time.Equal) &&
		maps.Equal(s.ClaimNamespaces, o.ClaimNamespaces) && s.RefillAfter.Equal(o.RefillAfter)
}

// Pool is one warm pool's document, pools/{name}. The API shows it with
// its spec's fields at the top (MarshalJSON), as a PUT gives
// them.
type Pool struct {
	Name   string     `json:"name" firestore:"name"`
	Spec   PoolSpec   `json:"spec" firestore:"spec"`
	Status PoolStatus `json:"status" firestore:"status"`
	// Generation counts the spec's changes.
	Generation int64     `json:"generation" firestore:"generation"`
	CreateTime time.Time `json:"createTime" firestore:"createTime"`
	// UpdateTime is Firestore's, the precondition of writes; not stored.
	UpdateTime time.Time `json:"updateTime" firestore:"-"`
	// DeleteRequestTime is set by DELETE: the pool deletes its unclaimed
	// members, then its document.
	DeleteRequestTime *time.Time `json:"deleteRequestTime,omitempty" firestore:"deleteRequestTime,omitempty"`
}

// poolJSON is a pool as the API shows it: its spec's fields at the top,
// as a PUT gives them ({provider, placement, size}), beside its status.
type poolJSON struct {
	Name      string    `json:"name"`
	Provider  string    `json:"provider"`
	Placement Placement `json:"placement"`
	Size      int       `json:"size"`
	// ClaimsPerNamespacePerHour is the spec's.
	ClaimsPerNamespacePerHour int        `json:"claimsPerNamespacePerHour,omitempty"`
	Status                    PoolStatus `json:"status"`
	Generation                int64      `json:"generation"`
	CreateTime                time.Time  `json:"createTime"`
	UpdateTime                time.Time  `json:"updateTime"`
	DeleteRequestTime         *time.Time `json:"deleteRequestTime,omitempty"`
}

// MarshalJSON writes the pool as the API shows it (poolJSON).
func (p Pool) MarshalJSON() ([]byte, error) {
	return json.Marshal(poolJSON{Name: p.Name, Provider: p.Spec.Provider, Placement: p.Spec.Placement, Size: p.Spec.Size,
		ClaimsPerNamespacePerHour: p.Spec.ClaimsPerNamespacePerHour, Status: p.Status, Generation: p.Generation, CreateTime: p.CreateTime, UpdateTime: p.UpdateTime, DeleteRequestTime: p.DeleteRequestTime})
}

// UnmarshalJSON reads the pool as the API shows it (poolJSON).
func (p *Pool) UnmarshalJSON(b []byte) error {
	var j poolJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*p = Pool{Name: j.Name, Spec: PoolSpec{Provider: j.Provider, Placement: j.Placement, Size: j.Size, ClaimsPerNamespacePerHour: j.ClaimsPerNamespacePerHour},
		Status: j.Status, Generation: j.Generation, CreateTime: j.CreateTime, UpdateTime: j.UpdateTime, DeleteRequestTime: j.DeleteRequestTime}
	return nil
}

// Path is the pool document's path, pools/{name}.
func (p *Pool) Path() string { return PoolPath(p.Name) }

// PoolPath is the path of the pool document of that name.
func PoolPath(name string) string { return PoolsCollection + "/" + name }

// ParsePoolPath parses a pool document's path, bare (pools/p) or as
// Eventarc's subject or a full resource name, like ParseKey.
func ParsePoolPath(path string) (string, error) {
	rest := path
	if i := strings.Index(rest, "/documents/"); i >= 0 && strings.HasPrefix(rest, "projects/") {
		rest = rest[i+len("/documents/"):]
	}
	rest = strings.TrimPrefix(rest, "documents/")
	parts := strings.Split(rest, "/")
	if len(parts) != 2 || parts[0] != PoolsCollection || !IsLabel(parts[1]) {
		return "", fmt.Errorf("document path %q is not of the form pools/{pool} with an RFC 1123 label", path)
	}
	return parts[1], nil
}

// Serves reports whether a proxy of spec s may be served by a VM of a pool
// of this spec: the same provider and placement, the default bootstrap
// (no cloud-init of its own), an ephemeral address, the default port and
// no SOCKS5 port: a warm VM's engine listens on the default port alone,
// and a listener is what a live change does not open. Everything else
// about a proxy (its ranges, ports, bandwidth, access log and
// credentials) is configuration the claimed VM is given.
func (ps PoolSpec) Serves(s Spec) bool {
	return s.Provider == ps.Provider && s.Placement == ps.Placement && !s.OwnCloudInit() &&
		(s.IPPolicy == "" || s.IPPolicy == IPEphemeral) &&
		(s.Port == 0 || s.Port == DefaultPort) && s.Socks5Port == 0
}

// MemberSpec is the spec of a pool member's proxy document: the pool's
// provider and placement, the default bootstrap, no client range.
func (ps PoolSpec) MemberSpec() Spec {
	return Spec{Provider: ps.Provider, Placement: ps.Placement, Port: DefaultPort, IPPolicy: IPEphemeral}
}
