package vmconfig

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"strconv"
	"time"
)

// The status the control plane reads through the proxy port: on a cloud
// whose VMs have no guest attributes and no identity to call home with
// (Hetzner), the control plane asks the VM's engine itself, on the proxy
// port, with a credential only the control plane can make (internal/vmstatus
// derives it from a key of its own, the uid and the VM's status id). The
// engine answers StatusHost there, to that credential only, and never
// proxies for it. Each answer is signed (SignAnswer) with a key of that
// VM alone, over the request's nonce, so that whoever else answers at the
// VM's address (a reused address, someone on the path, who may have seen
// the password go by) cannot tell the control plane what the VM serves.

// StatusHost is the host name the engine answers for itself on the proxy
// port, in the absolute form of a plain-HTTP request:
// GET http://egress-status.invalid/status (a Status) and
// GET http://egress-status.invalid/access?after=N (an AccessPage). RFC
// 6761 reserves .invalid: no name under it ever resolves, so no request
// for it could be meant for a destination.
const StatusHost = "egress-status.invalid"

// The paths of StatusHost.
const (
	StatusPath = "/status"
	AccessPath = "/access"
)

// StatusAccess says who may read the engine's status on its proxy port,
// and from where.
type StatusAccess struct {
	// User is the status credential: its name and a salted hash of its
	// password (HashPassword), never the password. It is not a proxy
	// user: the engine carries nothing for it.
	User User `json:"user"`
	// Sources are the CIDRs the control plane asks from (its fixed egress
	// addresses): a client from one of them that is not also in
	// AllowedSourceRanges may ask for the status and nothing else. The
	// VM's kernel filter admits them to the proxy's HTTP port too.
	Sources []string `json:"sources"`
	// SignKey is the key the engine signs each answer with (SignAnswer),
	// base64 (URL alphabet, unpadded) of at least 32 bytes: this VM's
	// alone, derived by the control plane, which checks the signature.
	// It is a secret of the VM's configuration, as readable as it is
	// (the cloud's API, to the project's token holders, who may as well
	// replace the VM), and it never travels in a request.
	SignKey string `json:"signKey"`
}

// The headers of a signed status answer: the control plane sends a fresh
// random nonce in StatusNonceHeader with each request, and the engine's
// answer carries SignAnswer's signature in StatusSignatureHeader.
const (
	StatusNonceHeader     = "X-Egress-Status-Nonce"
	StatusSignatureHeader = "X-Egress-Status-Signature"
)

// StatusNonceMin and StatusNonceMax bound a nonce's length in characters
// (base64 URL alphabet, unpadded): 16 random bytes are 22.
const (
	StatusNonceMin = 22
	StatusNonceMax = 128
)

// SignAnswer is the signature of a status answer: HMAC-SHA256 under the
// VM's sign key over the nonce, the request (method and target, such as
// "GET /access?after=7") and the answer's body, each length-prefixed so
// that no two of them run into each other, base64 (URL alphabet,
// unpadded). A signature made for one nonce, request or body is no
// signature of another.
func SignAnswer(key []byte, nonce, method, target string, body []byte) string {
	m := hmac.New(sha256.New, key)
	for _, part := range [][]byte{[]byte("egress-status/answer/v1"), []byte(nonce), []byte(method), []byte(target), body} {
		m.Write([]byte(strconv.Itoa(len(part)) + ":"))
		m.Write(part)
	}
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// ValidStatusNonce reports whether nonce is one a status request may
// carry: StatusNonceMin to StatusNonceMax characters of the base64 URL
// alphabet.
func ValidStatusNonce(nonce string) bool {
	if len(nonce) < StatusNonceMin || len(nonce) > StatusNonceMax {
		return false
	}
	for _, c := range nonce {
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// Readiness is what the VM's agent says of the configuration it applied,
// in the file the engine serves it from (the engine's -readiness flag): a
// cloud-init boot's agent writes it where the GCE agent writes the guest
// attributes egress/ready and egress/error.
type Readiness struct {
	// Generation is the generation the agent applied, or tried to.
	Generation int64 `json:"generation"`
	// Ready says its self-test passed: the engine serves Generation.
	Ready bool `json:"ready"`
	// Error is the one-line reason it cannot serve, when it is not ready.
	Error string `json:"error,omitempty"`
	// Instance and Zone are which VM the agent runs on, as its cloud's
	// metadata service says (EC2's instance id and availability zone,
	// KeyIMDS); empty where the agent reads none.
	Instance string `json:"instance,omitempty"`
	Zone     string `json:"zone,omitempty"`
	// Egress is the address the VM's outbound traffic leaves from, where
	// the VM routes it through an address that is not its own (a
	// static address the cloud's VM-side part routes through: KeyFollow);
	// empty where it leaves by the VM's own address, or not yet by the
	// other.
	Egress string `json:"egress,omitempty"`
}

// Status is the answer of GET http://egress-status.invalid/status: the
// generation the engine serves, whether the agent proved it serves that
// generation, why not, and the counters.
type Status struct {
	Generation int64  `json:"generation"`
	Ready      bool   `json:"ready"`
	Error      string `json:"error,omitempty"`
	// Instance and Zone are the readiness's: which VM answers.
	Instance string `json:"instance,omitempty"`
	Zone     string `json:"zone,omitempty"`
	// Egress is the readiness's: the address the VM's outbound traffic
	// leaves from, when it is not the VM's own.
	Egress string `json:"egress,omitempty"`
	Stats  Stats  `json:"stats"`
}

// The traffic order: on a cloud whose VMs take no configuration in place,
// the control plane tells a VM's engine to stop carrying new connections
// at its namespace's budget, or to carry them again, on the status door:
// PUT http://egress-status.invalid/traffic with the status credential and
// a nonce, as a status request, and the order in TrafficOrderHeader,
// signed in TrafficOrderSignatureHeader with the VM's sign key
// (SignOrder). The password travels in clear, so the signature is what
// proves the order the functions': the sign key never travels. The
// engine takes an order issued within OrderSkew of its own clock and
// after the last it took, so an order seen on the path and sent again
// changes nothing, and answers with its Status, signed as ever.
const (
	TrafficPath                 = "/traffic"
	TrafficOrderHeader          = "X-Egress-Traffic-Order"
	TrafficOrderSignatureHeader = "X-Egress-Traffic-Order-Signature"
)

// OrderSkew bounds how far an order's Issued may be from the engine's
// clock, either way.
const OrderSkew = 5 * time.Minute

// TrafficOrder is what the control plane tells a VM of its traffic.
type TrafficOrder struct {
	// Stop is the stop to serve; nil carries again.
	Stop *TrafficStop `json:"stop"`
	// Issued is when the control plane made the order.
	Issued time.Time `json:"issued"`
}

// SignOrder is the signature of a traffic order (order: the
// TrafficOrderHeader's value as sent): HMAC-SHA256 under the VM's sign
// key over the nonce, the request and the order, length-prefixed as
// SignAnswer's and under a label of its own, so that no answer's
// signature is an order's.
func SignOrder(key []byte, nonce, method, target, order string) string {
	m := hmac.New(sha256.New, key)
	for _, part := range []string{"egress-status/order/v1", nonce, method, target, order} {
		m.Write([]byte(strconv.Itoa(len(part)) + ":"))
		m.Write([]byte(part))
	}
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}
