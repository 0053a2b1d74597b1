package provider

import (
	"crypto/sha256"
	"encoding/hex"
	"regexp"
)

// uuidPattern is the canonical, lowercase form of a UUID, which is what the
// API generates for every document uid.
var uuidPattern = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// NameFromUID derives the instance name for the document with this uid. The
// name is deterministic, because Create is idempotent by name: a reconcile
// that crashed after Create and runs again asks for the same name and adopts
// the VM instead of making a second one.
//
// Every result is a valid GCE instance name ([a-z]([-a-z0-9]*[a-z0-9])?, at
// most 63 characters), and so valid for most other clouds too. A canonical
// UUID keeps its text ("proxy-" + uid), so an operator can read the owner off
// the VM name; anything else becomes "proxyh-" + 56 hex digits of its SHA-256.
// The two prefixes cannot produce the same name, the first form is
// injective, and the second collides only if SHA-256 does.
func NameFromUID(uid string) string {
	if uuidPattern.MatchString(uid) {
		return NamePrefixUUID + uid
	}
	sum := sha256.Sum256([]byte(uid))
	return NamePrefixHash + hex.EncodeToString(sum[:])[:56]
}

// The two forms of NameFromUID's names. Every VM, boot disk and static
// address the product makes is named by NameFromUID, so these prefixes
// are the fleet's names: deploy/terraform's IAM conditions grant the
// functions' Compute rights on these names only (NamePrefixes).
const (
	NamePrefixUUID = "proxy-"
	NamePrefixHash = "proxyh-"
)

// NamePrefixes are the prefixes of every name NameFromUID gives.
var NamePrefixes = []string{NamePrefixUUID, NamePrefixHash}
