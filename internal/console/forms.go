package console

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/egress-proxies/egress/internal/proxy"
)

// form is a form as the browser sent it, with what the API said of each
// field: its inputs are named as the API's fields, so a field violation
// lands beside the input it names.
type form struct {
	Values map[string]string
	// Errors are the violations of each input; Other the API's refusals
	// that name no input of the form.
	Errors map[string][]string
	Other  []string
}

func newForm() *form { return &form{Values: map[string]string{}, Errors: map[string][]string{}} }

// formOf reads the named inputs of a posted form.
func formOf(r *http.Request, names ...string) *form {
	f := newForm()
	r.ParseForm()
	for _, n := range names {
		f.Values[n] = strings.TrimSpace(r.PostForm.Get(n))
	}
	return f
}

// fieldsOf maps each of the API's field names to the input of that name.
func fieldsOf(names []string) map[string]string {
	m := map[string]string{}
	for _, n := range names {
		m[n] = n
	}
	return m
}

// take puts the API's refusal err on the form: each field violation
// beside the input its field belongs to (fields maps the API's field, or
// its start, to the input's name; spec.allowedSourceRanges[2] belongs to
// spec.allowedSourceRanges), the rest, and a refusal without fields, in
// Other.
func (f *form) take(err error, fields map[string]string) {
	e := apiError(err)
	if e == nil || len(e.FieldViolations) == 0 {
		f.Other = append(f.Other, message(err))
		return
	}
	for _, v := range e.FieldViolations {
		input := inputOf(v.Field, fields)
		if input == "" {
			f.Other = append(f.Other, v.Field+": "+v.Description)
			continue
		}
		f.Errors[input] = append(f.Errors[input], v.Description)
	}
}

// inputOf is the input a violation of field belongs to: the longest name
// of fields that is field or starts it.
func inputOf(field string, fields map[string]string) string {
	best, input := -1, ""
	for api, in := range fields {
		if field == api || strings.HasPrefix(field, api+"[") || strings.HasPrefix(field, api+".") {
			if len(api) > best {
				best, input = len(api), in
			}
		}
	}
	return input
}

// list splits a list a person typed: commas, spaces or new lines.
func list(s string) []string {
	out := strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\n' || r == '\r' || r == '\t' })
	if len(out) == 0 {
		return nil
	}
	return out
}

// portList reads a list of ports; nil for none. bad says what is not a
// port.
func portList(s string) (ports []int32, bad string) {
	for _, f := range list(s) {
		n, err := strconv.ParseInt(f, 10, 32)
		if err != nil {
			return nil, fmt.Sprintf("%q is not a port number", f)
		}
		ports = append(ports, int32(n))
	}
	return ports, ""
}

func joinPorts(ports []int32) string {
	s := make([]string, len(ports))
	for i, p := range ports {
		s[i] = strconv.Itoa(int(p))
	}
	return strings.Join(s, ", ")
}

func pathEscape(s string) string { return url.PathEscape(s) }

// phaseIcon is the sign beside a phase's name: the phase is told by its
// word and its sign, never by colour alone.
func phaseIcon(p proxy.Phase) string {
	switch p {
	case proxy.PhaseReady:
		return "✓"
	case proxy.PhaseFailed:
		return "✕"
	case proxy.PhaseDeleting:
		return "⌫"
	case proxy.PhaseReconfiguring, proxy.PhaseReplacing:
		return "↻"
	}
	if slices.Contains(proxy.Phases, p) {
		return "…"
	}
	return "?"
}

// humanBytes is n bytes for people: 1.5 MB.
func humanBytes(n int64) string {
	const unit = 1000
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %cB", float64(n)/float64(div), "kMGTPE"[exp])
}
