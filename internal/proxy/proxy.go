// Package proxy holds the domain types of the product: a proxy's spec and
// status, the phases it moves through, the key that names its document, the
// message that asks for it to be reconciled, and the errors every layer uses
// to speak about documents. It imports no cloud client, so the API, the
// reconciler and the GC share it without depending on Firestore.
package proxy

import (
	"net"
	"strconv"
	"time"
)

// Proxy is one proxy document, as stored and as the API shows it.
type Proxy struct {
	Name       string `json:"name" firestore:"name"`
	Namespace  string `json:"namespace" firestore:"namespace"`
	UID        string `json:"uid" firestore:"uid"`
	Generation int64  `json:"generation" firestore:"generation"`
	Spec       Spec   `json:"spec" firestore:"spec"`
	Status     Status `json:"status" firestore:"status"`
	// RequestedBy is the verified email of the caller that created it, when
	// the platform passed an identity.
	RequestedBy string    `json:"requestedBy,omitempty" firestore:"requestedBy,omitempty"`
	CreateTime  time.Time `json:"createTime" firestore:"createTime"`
	// UpdateTime is the document's update time as Firestore reports it. It
	// is not a stored field: writes use it as their precondition.
	UpdateTime        time.Time  `json:"updateTime" firestore:"-"`
	DeleteRequestTime *time.Time `json:"deleteRequestTime,omitempty" firestore:"deleteRequestTime,omitempty"`
	// RotateRequestTime is when a rotation was last asked for (POST
	// …:rotate); the reconciler rotates a VM created before it.
	RotateRequestTime *time.Time `json:"rotateRequestTime,omitempty" firestore:"rotateRequestTime,omitempty"`
	// ReplaceRequestTime is when a live change (a PATCH, new credentials)
	// last asked for a new VM: one the proxy's VM cannot take in place (its
	// provider cannot reconfigure, or the spec brings its own cloud-init).
	// It and RotateRequestTime are held ROTATE_MIN_INTERVAL apart.
	ReplaceRequestTime *time.Time `json:"replaceRequestTime,omitempty" firestore:"replaceRequestTime,omitempty"`

	// Pool, set only on a warm pool's member document
	// (pools/{pool}/proxies/{name}), is the pool's name. A member's VM
	// serves no one: it waits, booted and proven, to be claimed.
	Pool string `json:"pool,omitempty" firestore:"pool,omitempty"`
	// ClaimedBy, set only on a pool's member, is the proxy that claimed its
	// VM. From the claim on, the VM is that proxy's: the member document
	// never deletes or replaces it, and stays (counted in the pool's
	// claimsLastHour) so that its uid claims the VM until the proxy has
	// relabelled it.
	//
	// It is stored as null while unclaimed (no omitempty), so that a
	// claim's query asks Firestore for unclaimed members only: a filter
	// on null matches a null field, never a missing one.
	ClaimedBy *ClaimRef `json:"claimedBy,omitempty" firestore:"claimedBy"`

	Reconciler Bookkeeping `json:"-" firestore:"reconciler"`
}

// Spent is what a deleted proxy cost in its last month, in nanos of the
// deployment's currency: what its document's deletion adds to its
// namespace's DeletedSpend.
type Spent struct {
	Month string
	Nanos int64
}

// ClaimRef names the proxy that claimed a pool member's VM, and when.
type ClaimRef struct {
	Namespace string    `json:"namespace" firestore:"namespace"`
	Name      string    `json:"name" firestore:"name"`
	UID       string    `json:"uid" firestore:"uid"`
	Time      time.Time `json:"time" firestore:"time"`
}

// Socks5Endpoint is "ip:socks5Port" once the proxy has an endpoint and
// its spec serves SOCKS5, else "".
func (p *Proxy) Socks5Endpoint() string {
	host, _, err := net.SplitHostPort(p.Status.Endpoint)
	if p.Spec.Socks5Port == 0 || err != nil {
		return ""
	}
	return net.JoinHostPort(host, strconv.Itoa(int(p.Spec.Socks5Port)))
}

// Key returns the key of the proxy's document.
func (p *Proxy) Key() Key { return Key{Namespace: p.Namespace, Name: p.Name, Pool: p.Pool} }
