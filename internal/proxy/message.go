package proxy

import (
	"fmt"
	"strings"
)

// Reason says why a reconcile runs: what brought the event or the message.
type Reason string

const (
	// ReasonWritten is a Firestore event: the document was written. It
	// brings a look only where the document alone says what to do next.
	ReasonWritten Reason = "written"
	// ReasonReady is a VM's call-home: its startup script's self-test
	// passed. It carries the uid of the proxy the VM serves.
	ReasonReady Reason = "ready"
	// ReasonBootFailed is a VM's call-home when its self-test failed (at
	// its first boot or a later one), so the reconciler replaces it now.
	ReasonBootFailed Reason = "boot-failed"
	// ReasonSweep is the garbage collector re-driving a document that
	// stopped progressing.
	ReasonSweep Reason = "sweep"
	// ReasonDrift is the garbage collector re-driving a Ready document
	// whose VM its listing shows gone or stopped.
	ReasonDrift Reason = "drift"
	// ReasonRequeue is a run handing its document on to the next, when it
	// waited as long as one run may.
	ReasonRequeue Reason = "requeue"
	// ReasonAge is the garbage collector re-driving a Ready document whose
	// VM is due for rotation: older than the spec's maxAge, or older than
	// a rotate request.
	ReasonAge Reason = "age"
	// ReasonClaimed asks a warm pool (a message naming pools/{pool}) to
	// refill after a proxy claimed one of its VMs.
	ReasonClaimed Reason = "claimed"
	// ReasonMember asks a warm pool to look again after one of its members
	// became Ready or Failed, or went.
	ReasonMember Reason = "member"
	// ReasonAccessPull is the garbage collector asking, once a tick, for
	// the access lines of the VMs read by pull (hetzner, aws) to be read
	// and written to the log egress-proxy-access (AccessPull). It names
	// no document.
	ReasonAccessPull Reason = "access-pull"
	// ReasonCost is the garbage collector asking for a settled Ready
	// proxy's status.cost to be computed again: it is spend.Refresh old,
	// or of another month, and no write of the status would come to do
	// it.
	ReasonCost Reason = "cost"
	// ReasonTrafficStop is the collector's tick asking each proxy of a
	// namespace whose traffic it stopped at the budget, or let go again
	// (tenancy.Namespace.TrafficStopped), to hand its VM the change
	// without replacing it.
	ReasonTrafficStop Reason = "traffic-stop"
)

// Requested reports whether the reason is a request to look at the
// document now (a message), rather than the event of a write.
func (r Reason) Requested() bool { return r != ReasonWritten }

// ReconcileMessage is the JSON body of a message on topic proxy-reconcile
// or proxy-callhome: it names a document to look at. Like every event, it
// only says where to look; the reconciler reads the document fresh.
//
// The functions name the document by its path, on proxy-reconcile; a VM
// calling home, on proxy-callhome, names it by {namespace, name, uid},
// what its metadata told it, with reason "ready" or "boot-failed".
type ReconcileMessage struct {
	// Document is the document path, namespaces/{ns}/proxies/{name}.
	Document string `json:"document,omitempty"`
	// Namespace and Name name the document as a VM's call-home does.
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name,omitempty"`
	// Pool, from a warm pool's VM, is its pool: the VM's document is the
	// member pools/{Pool}/proxies/{Name}.
	Pool string `json:"pool,omitempty"`
	// UID, from a VM, is the uid of the proxy it serves: a document of
	// another uid (the name deleted and created again) is not what it
	// meant.
	UID string `json:"uid,omitempty"`
	// Reason says who asked.
	Reason Reason `json:"reason,omitempty"`
	// Lease, on a requeue, is the lease holder handing its lease on to the
	// run this message starts: a run whose wait budget is spent passes the
	// document on without releasing the lease (which would cost a write and
	// an event).
	Lease string `json:"lease,omitempty"`
	// AccessPull, on a ReasonAccessPull message, is what the collector's
	// listings found of the VMs read by pull.
	AccessPull *AccessPull `json:"accessPull,omitempty"`
}

// PoolName is the pool whose document the message names
// ({"document":"pools/P"}), if it names one: such a message asks for the
// pool's reconcile, not a proxy's.
func (m ReconcileMessage) PoolName() (string, bool) {
	if !strings.HasPrefix(m.Document, PoolsCollection+"/") && !strings.Contains(m.Document, "/documents/"+PoolsCollection+"/") {
		return "", false
	}
	name, err := ParsePoolPath(m.Document)
	return name, err == nil
}

// Key is the document the message names.
func (m ReconcileMessage) Key() (Key, error) {
	if m.Document != "" {
		return ParseKey(m.Document)
	}
	if m.Pool != "" {
		k := Key{Pool: m.Pool, Name: m.Name}
		if !IsLabel(k.Pool) || !IsLabel(k.Name) || m.Namespace != "" {
			return Key{}, fmt.Errorf("message names pool %q and name %q (and namespace %q): a pool's member has RFC 1123 labels for both and no namespace", m.Pool, m.Name, m.Namespace)
		}
		return k, nil
	}
	k := Key{Namespace: m.Namespace, Name: m.Name}
	if !IsLabel(k.Namespace) || !IsLabel(k.Name) {
		return Key{}, fmt.Errorf("message names neither a document path nor a namespace and name that are RFC 1123 labels (%q, %q)", m.Namespace, m.Name)
	}
	return k, nil
}
