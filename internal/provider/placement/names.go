package placement

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/egress-proxies/egress/internal/provider"
)

// Field is a placement's field that names one of the operator's list:
// its JSON path and the reasons of its two rules.
type Field struct {
	path, invalid, notAllowed string
}

// The fields a placement chooses from a list of the operator's.
var (
	MachineType = Field{"placement.machineType", provider.ReasonMachineTypeInvalid, provider.ReasonMachineTypeNotAllowed}
	Image       = Field{"placement.image", provider.ReasonImageInvalid, provider.ReasonImageNotAllowed}
)

// Names is what the operator allows a placement to name in one field (a
// cloud's machine types, its images), and the default a placement that
// names none gets, which Create uses too. The words are the cloud's, so
// the errors speak its terms.
type Names struct {
	Field Field
	// Noun is what the cloud calls one ("server type", "VM size"), in
	// "allows no …", "… %q is not …" and "is not a … this platform
	// allows".
	Noun string
	// DefaultNoun, when set, is the noun of the error of a policy without
	// Default ("the size of a placement that names none"), where the
	// cloud has said it shorter than Noun.
	DefaultNoun string
	// Default is the name of a placement that names none.
	Default string
	// Allowed are the names a placement may take; they must hold Default.
	Allowed []string
	// Valid is the form of a name.
	Valid func(string) bool
	// Malformed follows a placement's name not Valid: "is not a server
	// type name such as cx23".
	Malformed string
	// MalformedEntry follows a policy's entry not Valid, when it is said
	// otherwise than Malformed.
	MalformedEntry string
}

// article is "an" before a vowel, so that the errors read "an image".
func article(noun string) string {
	if noun != "" && strings.ContainsRune("aeiouAEIOU", rune(noun[0])) {
		return "an"
	}
	return "a"
}

// Check validates the operator's list itself, for the configuration: it
// is not empty, every entry Valid, and Default allowed. The error names
// the entry.
func (n Names) Check() error {
	if len(n.Allowed) == 0 {
		return fmt.Errorf("allows no %s", n.Noun)
	}
	for _, e := range n.Allowed {
		if !n.Valid(e) {
			return fmt.Errorf("%s %q %s", n.Noun, e, cmp.Or(n.MalformedEntry, n.Malformed))
		}
	}
	if !slices.Contains(n.Allowed, n.Default) {
		return fmt.Errorf("does not allow %s, the %s of a placement that names none", n.Default, cmp.Or(n.DefaultNoun, n.Noun))
	}
	return nil
}

// Check checks the operator's lists in turn (Names.Check), for a cloud
// whose policy holds several: the first error is the policy's.
func Check(lists ...Names) error {
	for _, n := range lists {
		if err := n.Check(); err != nil {
			return err
		}
	}
	return nil
}

// Choose holds a placement's name to the list: the name, or Default for
// none, Valid and allowed. It returns the name, and whether it passed, so
// that the cloud can go on with rules of its own.
func (v *Violations) Choose(n Names, name string) (string, bool) {
	name = cmp.Or(name, n.Default)
	switch {
	case !n.Valid(name):
		v.Add(n.Field.path, n.Field.invalid, "%q %s", name, n.Malformed)
	case !slices.Contains(n.Allowed, name):
		v.Add(n.Field.path, n.Field.notAllowed, "%q is not %s %s this platform allows: %s", name, article(n.Noun), n.Noun, strings.Join(n.Allowed, ", "))
	default:
		return name, true
	}
	return name, false
}
