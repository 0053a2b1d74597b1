package ec2fake

import (
	"path"
	"slices"
	"strings"
)

// filter is one of a Describe call's Filter.N: a name and the values it
// accepts. EC2 joins a filter's values with OR and the filters with AND,
// and a value may hold the wildcards * and ? (the API reference's
// "Filter" data type).
type filter struct {
	name   string
	values []string
}

type filters []filter

// filters reads Filter.N.Name and Filter.N.Value.N, refusing a name the
// action does not know, as EC2 does ("The filter 'x' is invalid"). A
// name of the form tag:KEY is allowed where "tag:" is.
func (r *request) filters(known ...string) (filters, error) {
	var out filters
	for i := 1; i <= r.count("Filter", "Name"); i++ {
		f := r.sub("Filter", i)
		name := f.str("Name")
		ok := slices.Contains(known, name) || (strings.HasPrefix(name, "tag:") && slices.Contains(known, "tag:"))
		if !ok {
			return nil, errorf("InvalidParameterValue", "The filter '%s' is invalid", name)
		}
		out = append(out, filter{name: name, values: f.list("Value")})
	}
	return out, nil
}

// match reports whether a resource with these fields and tags passes
// every filter.
func (fs filters) match(fields, tags map[string]string) bool {
	for _, f := range fs {
		var have []string
		switch {
		case strings.HasPrefix(f.name, "tag:"):
			if v, ok := tags[strings.TrimPrefix(f.name, "tag:")]; ok {
				have = []string{v}
			}
		case f.name == "tag-key":
			for k := range tags {
				have = append(have, k)
			}
		default:
			if v, ok := fields[f.name]; ok && v != "" {
				have = []string{v}
			}
		}
		if !anyMatch(f.values, have) {
			return false
		}
	}
	return true
}

// anyMatch reports whether any value matches any of the patterns.
func anyMatch(patterns, values []string) bool {
	for _, p := range patterns {
		for _, v := range values {
			if ok, err := path.Match(p, v); ok && err == nil {
				return true
			}
		}
	}
	return false
}
