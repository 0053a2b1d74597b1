package proxy

// AccessPull is what the garbage collector's listings found of the VMs
// the control plane reads by asking them (provider.Instance.StatusPort:
// hetzner's and aws's), for the Reconcile run that reads their access
// lines (internal/accesspull). The collector has just listed them, so the
// run lists nothing itself.
type AccessPull struct {
	// Listed are the provider types whose VMs read by pull were listed
	// completely: a cursor of one of them whose VM is not in VMs is of a
	// VM gone. A provider whose listing failed is not here, and its
	// cursors are kept.
	Listed []string `json:"listed,omitempty"`
	// VMs are this deployment's VMs read by pull, in any state.
	VMs []PulledVM `json:"vms,omitempty"`
}

// PulledVM is one VM read by pull, as its provider listed it.
type PulledVM struct {
	Provider   string `json:"provider"`
	ProviderID string `json:"providerID"`
	UID        string `json:"uid"`
	IP         string `json:"ip,omitempty"`
	Zone       string `json:"zone,omitempty"`
	// Port is the port its proxy answers the status request on.
	Port int32 `json:"port"`
	// StatusID is its status id (provider.Instance.StatusID), from which
	// its own status credential and sign key are derived; "" for a VM
	// made before them, which is not asked.
	StatusID string `json:"statusID,omitempty"`
	// Running says its provider lists it running: only such a VM is
	// asked.
	Running bool `json:"running,omitempty"`
}

// AccessCursor is where the reading of one VM's access lines stands: the
// number of the last line written to the log (After, the engine's
// numbering), and the labels its lines are written under, found once from
// the proxy document of its uid (a VM serves one proxy for its life).
type AccessCursor struct {
	Provider   string `firestore:"provider"`
	ProviderID string `firestore:"providerID"`
	UID        string `firestore:"uid"`
	Namespace  string `firestore:"namespace"`
	Name       string `firestore:"name"`
	// AccessLog is the proxy's spec.accessLog when the VM was first seen:
	// a VM of a proxy that keeps no access log is not asked (its engine
	// keeps no line), and a change of it makes a new VM on these clouds.
	AccessLog bool  `firestore:"accessLog"`
	After     int64 `firestore:"after"`
	// Named says the proxy document named this VM as its own
	// (status.providerID, or reconciler.retiring) when the cursor was
	// made. A VM's uid label is no proof: anyone who may create or tag
	// instances in the cloud's project can put a proxy's uid on one. A
	// cursor without it (made before the pull checked) is looked up
	// again.
	Named bool `firestore:"named,omitempty"`
}

// UIDProxy is what the access pull reads of the proxy document of a
// uid: which it is, whether it keeps an access log (spec.accessLog, on
// when unset), and the providerIDs of the VMs it names as its own
// (status.providerID, and reconciler.retiring during a make-before-break
// rotation), the only VMs whose lines are its.
type UIDProxy struct {
	Key       Key
	AccessLog bool
	VMs       []string
}
