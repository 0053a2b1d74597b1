// Package vmstatus is how the control plane learns what a proxy VM
// serves on a cloud whose VMs have neither Google's guest attributes nor
// an identity to call home with (Hetzner's, and the clouds after it): it
// asks the VM. The VM's engine answers a reserved host name on its proxy
// port (vmconfig.StatusHost: GET http://egress-status.invalid/status, and
// /access?after=N for the access log) to one credential only, which it
// never proxies for (vmconfig.StatusAccess).
//
// The credential is derived, not stored: its password is
// HMAC-SHA256(key, uid) under a key only the control plane holds (in
// production a Secret Manager secret that only Reconcile and
// CollectGarbage may read; a key of the process in the local stack and
// the tests). The VM's configuration, which the cloud's API returns to
// anyone holding the project's token, holds a salted hash of it, so
// nothing a reader of it finds opens the status or the proxy, and no
// password is kept anywhere: each is made again from the key when asked.
// A leaked password opens one VM's status and nothing else (its uid is in
// it); a leaked key opens every VM's status, still no proxy: rotating the
// key makes the VMs booted before unreadable, so they are replaced at their
// boot timeout (docs/operations/hetzner.md).
//
// The requests come from the control plane's fixed egress addresses (its
// Cloud NAT's), which the VM's kernel filter and the engine admit to the
// HTTP port for the status alone (StatusAccess.Sources): that is what the
// cloud's firewall must let through too.
//
// Prober asks; Access reads the access log the same way.
package vmstatus

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/netip"

	"github.com/egress-proxies/egress/internal/vm/vmconfig"
)

// User is the status credential's name, the same on every VM: the
// password is what is per VM.
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

// Password is the status password of the VM of the proxy uid.
func (k Key) Password(uid string) string {
	m := hmac.New(sha256.New, k.k)
	m.Write([]byte("egress-status/v1/" + uid))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// Access is the status access the configuration of the VM of uid
// carries: the credential's salted hash, and the control plane's
// addresses, sources. Each call salts afresh.
func (k Key) Access(uid string, sources []string) (*vmconfig.StatusAccess, error) {
	if len(k.k) == 0 {
		return nil, errors.New("vmstatus: no status key")
	}
	if len(sources) == 0 {
		return nil, errors.New("vmstatus: no status source range: the control plane could not reach any VM's status")
	}
	for _, s := range sources {
		if _, err := netip.ParsePrefix(s); err != nil {
			return nil, fmt.Errorf("vmstatus: status source range %q is not a CIDR: %w", s, err)
		}
	}
	hash, err := vmconfig.NewPasswordHash(k.Password(uid))
	if err != nil {
		return nil, err
	}
	return &vmconfig.StatusAccess{User: vmconfig.User{Name: User, PasswordHash: hash}, Sources: append([]string(nil), sources...)}, nil
}
