// Package vmstatus is how the control plane learns what a proxy VM
// serves on a cloud whose VMs have neither Google's guest attributes nor
// an identity to call home with (Hetzner's, and the clouds after it): it
// asks the VM. The VM's engine answers a reserved host name on its proxy
// port (vmconfig.StatusHost: GET http://egress-status.invalid/status, and
// /access?after=N for the access log) to one credential only, which it
// never proxies for (vmconfig.StatusAccess).
//
// The credential is per VM, derived, not stored. Each VM gets a status id
// when it is made (StatusID: a hash of the uid and the create attempt,
// CreateRequest.RequestID, which is new for every VM the reconciler
// makes), which its provider keeps in a label of the VM (vmside) so the
// control plane reads it back with the VM. Its password is
// HMAC-SHA256(key, "egress-status/v2/"+uid+"/"+id) under a key only the
// control plane holds (in production a Secret Manager secret that only
// Reconcile and CollectGarbage may read; a key of the process in the
// local stack and the tests). The VM's configuration, which the cloud's
// API returns to anyone holding the project's token, holds a salted hash
// of it, so nothing a reader of it finds opens the status or the proxy,
// and no password is kept anywhere: each is made again from the key when
// asked. The uid alone no longer makes it: root on one VM of a proxy (a
// retired one above all) learns that VM's password and nothing that opens
// the proxy's next VM, which has another id. :rotateCredentials, which
// gives a proxy of these clouds a new VM (they cannot reconfigure in
// place), gives it a new status credential with it.
//
// The password travels in clear (a plain-HTTP request to the VM's
// address), so it proves nothing about who answers: a reused address, or
// someone on the path who saw it go by, could answer for the VM. So each
// answer is signed: the configuration carries a second secret of that VM
// alone, its sign key (HMAC-SHA256(key, "egress-status/sign/v2/"+uid+"/"+
// id)), which never travels; the prober sends a fresh random nonce with
// each request, and takes an answer only with the signature
// vmconfig.SignAnswer makes with the VM's sign key over that nonce, the
// request and the body. An answer without it, with another VM's, or with
// one made for another nonce (a replay) is refused with an error that
// names the VM and the rule, and is no answer: the VM is not taken to
// serve, nor to serve any generation. Whoever can read the VM's
// configuration (the project's token holders) could sign for it; they can
// as well delete or rebuild the VM, so that is no new power.
//
// A VM booted before this scheme has neither a status id label nor a sign
// key: the prober does not ask it (no credential is sent), so it is never
// taken to serve and its access lines are not read; the reconciler
// replaces it at its boot timeout as a VM that does not answer
// (docs/operations/upgrading.md). A leaked key opens every VM's status,
// still no proxy: rotating the key makes the VMs booted before unreadable,
// so they are replaced at their boot timeout (docs/operations/hetzner.md).
//
// The requests come from the control plane's fixed egress addresses (its
// Cloud NAT's), which the VM's kernel filter and the engine admit to the
// HTTP port for the status alone (StatusAccess.Sources): that is what the
// cloud's firewall must let through too.
//
// Prober asks; Access reads the access log the same way.
package vmstatus

import (
	"cmp"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net/netip"
	"regexp"

	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/vm/vmconfig"
)

// User is the status credential's name, the same on every VM: the
// password (and the sign key) are what is per VM.
const User = "egress-status"

// MinKeyBytes is the least key this package takes: 256 bits.
const MinKeyBytes = 32

// Key is the control plane's key the status passwords are derived from.
type Key struct{ k []byte }

// NewKey takes a key of at least MinKeyBytes bytes.
func NewKey(k []byte) (Key, error) {
	if len(k) < MinKeyBytes {
		return Key{}, fmt.Errorf("vmstatus: the status key is %d bytes, want at least %d (make one with: head -c 32 /dev/urandom | base64)", len(k), MinKeyBytes)
	}
	return Key{k: append([]byte(nil), k...)}, nil
}

// ParseKey reads a key as Secret Manager holds it: base64 (standard or
// URL alphabet, padded or not) of at least MinKeyBytes bytes.
func ParseKey(text string) (Key, error) {
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if k, err := enc.DecodeString(text); err == nil {
			return NewKey(k)
		}
	}
	return Key{}, errors.New("vmstatus: the status key is not base64 (make one with: head -c 32 /dev/urandom | base64)")
}

// StatusID is the status id of the VM req makes: a hash of the uid and
// the create attempt (req.RequestID; req.Name where a caller sets none,
// which is then the same for every VM of the uid), 32 hex digits, which
// fit a Hetzner label and an EC2 tag. A retry of an attempt makes (or
// adopts) the same VM, so it has the same id; a new attempt (a
// replacement, a rotation, new credentials) a new one. It is no secret.
func StatusID(req provider.CreateRequest) string {
	sum := sha256.Sum256([]byte("egress-status/id/v2\x00" + req.UID + "\x00" + cmp.Or(req.RequestID, req.Name)))
	return hex.EncodeToString(sum[:16])
}

var idPattern = regexp.MustCompile(`^[0-9a-f]{32}$`)

// CheckStatusID says what is wrong with a VM's status id, as its label
// gives it: empty (a VM booted before per-VM credentials, or not one of
// ours) or not StatusID's shape.
func CheckStatusID(id string) error {
	switch {
	case id == "":
		return errors.New("the VM has no status id label: it was made before per-VM status credentials, or not by this control plane; it is not asked")
	case !idPattern.MatchString(id):
		return fmt.Errorf("the VM's status id %q is not 32 hex digits", id)
	}
	return nil
}

// Password is the status password of the VM of the proxy uid whose status
// id is id.
func (k Key) Password(uid, id string) string {
	return base64.RawURLEncoding.EncodeToString(k.derive("egress-status/v2/" + uid + "/" + id))
}

// SignKey is the key the VM of uid with status id signs its answers with.
func (k Key) SignKey(uid, id string) []byte {
	return k.derive("egress-status/sign/v2/" + uid + "/" + id)
}

func (k Key) derive(label string) []byte {
	m := hmac.New(sha256.New, k.k)
	m.Write([]byte(label))
	return m.Sum(nil)
}

// Access is the status access the configuration of the VM of uid with
// status id carries: the credential's salted hash, its sign key, and the
// control plane's addresses, sources. Each call salts afresh.
func (k Key) Access(uid, id string, sources []string) (*vmconfig.StatusAccess, error) {
	if len(k.k) == 0 {
		return nil, errors.New("vmstatus: no status key")
	}
	if err := CheckStatusID(id); err != nil {
		return nil, fmt.Errorf("vmstatus: the status access of uid %s: %w", uid, err)
	}
	if len(sources) == 0 {
		return nil, errors.New("vmstatus: no status source range: the control plane could not reach any VM's status")
	}
	for _, s := range sources {
		if _, err := netip.ParsePrefix(s); err != nil {
			return nil, fmt.Errorf("vmstatus: status source range %q is not a CIDR: %w", s, err)
		}
	}
	hash, err := vmconfig.NewPasswordHash(k.Password(uid, id))
	if err != nil {
		return nil, err
	}
	return &vmconfig.StatusAccess{User: vmconfig.User{Name: User, PasswordHash: hash}, Sources: append([]string(nil), sources...),
		SignKey: base64.RawURLEncoding.EncodeToString(k.SignKey(uid, id))}, nil
}
