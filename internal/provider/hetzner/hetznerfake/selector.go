package hetznerfake

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// selector is a parsed label selector, as the reference's "Label
// Selector" section gives the language: terms joined by commas, each one
// of
//
//	k          the label is there      !k           it is not
//	k=v, k==v  it has the value v      k!=v         it has not (or is absent)
//	k in (v1,v2)                       k notin (v1,v2)
//
// and a resource matches when every term does.
type selector []term

type term struct {
	key, op string
	values  []string
}

var (
	inTerm = regexp.MustCompile(`^([^\s=!,()]+)\s+(in|notin)\s+\(([^)]*)\)$`)
	keyRE  = regexp.MustCompile(`^[A-Za-z0-9._/-]+$`)
)

// parseSelector reads a selector; "" selects everything.
func parseSelector(s string) (selector, error) {
	var out selector
	for _, raw := range splitTerms(s) {
		t := strings.TrimSpace(raw)
		var tm term
		switch {
		case t == "":
			continue
		case inTerm.MatchString(t):
			m := inTerm.FindStringSubmatch(t)
			tm = term{key: m[1], op: m[2]}
			for _, v := range strings.Split(m[3], ",") {
				tm.values = append(tm.values, strings.TrimSpace(v))
			}
		case strings.Contains(t, "!="):
			k, v, _ := strings.Cut(t, "!=")
			tm = term{key: strings.TrimSpace(k), op: "!=", values: []string{strings.TrimSpace(v)}}
		case strings.Contains(t, "=="):
			k, v, _ := strings.Cut(t, "==")
			tm = term{key: strings.TrimSpace(k), op: "=", values: []string{strings.TrimSpace(v)}}
		case strings.Contains(t, "="):
			k, v, _ := strings.Cut(t, "=")
			tm = term{key: strings.TrimSpace(k), op: "=", values: []string{strings.TrimSpace(v)}}
		case strings.HasPrefix(t, "!"):
			tm = term{key: strings.TrimSpace(t[1:]), op: "absent"}
		default:
			tm = term{key: t, op: "present"}
		}
		if !keyRE.MatchString(tm.key) {
			return nil, fmt.Errorf("label_selector: %q is not a term", t)
		}
		out = append(out, tm)
	}
	return out, nil
}

// splitTerms splits at the commas outside parentheses.
func splitTerms(s string) []string {
	var out []string
	depth, start := 0, 0
	for i, c := range s {
		switch c {
		case '(':
			depth++
		case ')':
			depth--
		case ',':
			if depth == 0 {
				out = append(out, s[start:i])
				start = i + 1
			}
		}
	}
	return append(out, s[start:])
}

func (sel selector) matches(labels map[string]string) bool {
	for _, t := range sel {
		v, ok := labels[t.key]
		var match bool
		switch t.op {
		case "present":
			match = ok
		case "absent":
			match = !ok
		case "=":
			match = ok && v == t.values[0]
		case "!=":
			match = !ok || v != t.values[0]
		case "in":
			match = ok && slices.Contains(t.values, v)
		case "notin":
			match = !ok || !slices.Contains(t.values, v)
		}
		if !match {
			return false
		}
	}
	return true
}

var (
	labelKeyRE   = regexp.MustCompile(`^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$`)
	labelValueRE = regexp.MustCompile(`^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$`)
)

// checkLabels holds labels to the reference's rules ("Labels"): keys of
// an optional DNS prefix and a name of at most 63 characters, values of
// at most 63, alphanumeric at both ends with -, _ and . between.
func checkLabels(labels map[string]string) *Fault {
	for k, v := range labels {
		if !labelKeyRE.MatchString(k) || !labelValueRE.MatchString(v) {
			f := invalidInput("invalid label %q=%q", k, v)
			return &f
		}
	}
	return nil
}
