package vmconfig

import (
	"encoding/json"
	"time"
)

// What a VM publishes on its call-home topic (KeyCallHomeTopic), beside
// the hint {namespace|pool, name, uid, reason} it has always sent. The
// control plane's side is internal/callhome.
const (
	// IdentityAttribute carries the VM's identity token, from its metadata
	// server's instance/service-accounts/default/identity with the topic's
	// full name as the audience and format=full: the control plane drops
	// a message without a valid one.
	IdentityAttribute = "identity"
	// KindAttribute is KindAccess on a batch of access lines (AccessBatch);
	// a hint has none.
	KindAttribute = "kind"
	KindAccess    = "access"
)

// AccessInterval is how often the agent ships the engine's new access
// lines, one message per interval at most: inside the call-home bucket
// every VM has (internal/callhome).
const AccessInterval = time.Minute

// AccessBatch is the body of an access message: the engine's access lines
// (its stats listener's GET /access) of the proxy {namespace, name, uid}
// the VM serves, and how many lines the engine dropped because no one read
// them in time. The control plane files the lines under the proxy its
// identity token's VM serves, whatever the batch says.
type AccessBatch struct {
	Namespace string            `json:"namespace"`
	Name      string            `json:"name"`
	UID       string            `json:"uid"`
	Dropped   int64             `json:"dropped,omitempty"`
	Lines     []json.RawMessage `json:"lines"`
}
