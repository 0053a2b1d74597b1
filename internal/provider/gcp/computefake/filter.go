package computefake

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// The list filters the fake understands. Compute documents one filter
// language for every list method (the `filter` query parameter of, e.g.,
// https://cloud.google.com/compute/docs/reference/rest/v1/zoneOperations/list):
// `field op value` with op one of = != > < <= >= :, several comparisons
// each in parentheses and joined by an implicit or explicit AND (or by OR),
// and a second, regular-expression form with eq and ne. The fake takes a
// useful part of it and refuses the rest with a 400 that says so, because
// a filter it ignored would list what the caller asked to leave out.

var labelFilter = regexp.MustCompile(`^labels\.([a-z0-9_-]+)\s*=\s*"?([a-z0-9_-]*)"?$`)

// parseLabelFilter reads the one filter the aggregated lists take,
// labels.KEY=VALUE; an empty filter gives an empty key.
func parseLabelFilter(f string) (key, value string, err error) {
	if f == "" {
		return "", "", nil
	}
	m := labelFilter.FindStringSubmatch(strings.TrimSpace(f))
	if m == nil {
		return "", "", errors.New("the fake understands only labels.KEY=VALUE filters, not " + f)
	}
	return m[1], m[2], nil
}

// comparison is one `field op value` of a filter, op being = or !=.
type comparison struct{ field, op, value string }

var comparisonRE = regexp.MustCompile(`^([A-Za-z][A-Za-z0-9_]*)\s*(!=|=)\s*("(?:[^"\\]|\\.)*"|[^\s()"]+)$`)

// parseFilter reads a filter of comparisons on the named fields: a single
// comparison, or comparisons each in parentheses joined by AND or by
// nothing, which Compute documents as AND too. Values may be quoted.
func parseFilter(f string, fields map[string]bool) ([]comparison, error) {
	f = strings.TrimSpace(f)
	if f == "" {
		return nil, nil
	}
	if !strings.HasPrefix(f, "(") {
		c, err := parseComparison(f, fields)
		if err != nil {
			return nil, err
		}
		return []comparison{c}, nil
	}
	var out []comparison
	for rest := f; rest != ""; {
		if len(out) > 0 {
			switch word, after, _ := strings.Cut(rest, " "); word {
			case "AND":
				rest = strings.TrimSpace(after)
			case "OR":
				return nil, errors.New("the fake does not understand OR")
			}
		}
		if !strings.HasPrefix(rest, "(") {
			return nil, fmt.Errorf("expected a parenthesised comparison at %q", rest)
		}
		end := closing(rest)
		if end < 0 {
			return nil, fmt.Errorf("unbalanced parenthesis in %q", rest)
		}
		c, err := parseComparison(rest[1:end], fields)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
		rest = strings.TrimSpace(rest[end+1:])
	}
	return out, nil
}

// closing is the index of the parenthesis that closes s[0], skipping
// quoted strings, or -1.
func closing(s string) int {
	quoted := false
	for i := 1; i < len(s); i++ {
		switch {
		case quoted && s[i] == '\\':
			i++
		case s[i] == '"':
			quoted = !quoted
		case !quoted && s[i] == '(':
			return -1 // nesting is not for the fake
		case !quoted && s[i] == ')':
			return i
		}
	}
	return -1
}

func parseComparison(s string, fields map[string]bool) (comparison, error) {
	m := comparisonRE.FindStringSubmatch(strings.TrimSpace(s))
	if m == nil {
		return comparison{}, fmt.Errorf("%q is not a comparison FIELD = VALUE or FIELD != VALUE", s)
	}
	if !fields[m[1]] {
		return comparison{}, fmt.Errorf("the fake does not filter on %q", m[1])
	}
	value := m[3]
	if strings.HasPrefix(value, `"`) {
		v, err := strconv.Unquote(value)
		if err != nil {
			return comparison{}, fmt.Errorf("bad quoted value %s: %w", value, err)
		}
		value = v
	}
	return comparison{field: m[1], op: m[2], value: value}, nil
}

// matches reports whether every comparison holds, field reading a field's
// value off the thing filtered.
func matches(cs []comparison, field func(name string) string) bool {
	for _, c := range cs {
		if (field(c.field) == c.value) != (c.op == "=") {
			return false
		}
	}
	return true
}
