package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"reflect"
	"strconv"
	"strings"

	"github.com/egress-proxies/egress/internal/proxy"
)

// MaxBodyBytes bounds a request body.
const MaxBodyBytes = 1 << 20

// decodeBody reads a JSON body of at most MaxBodyBytes into v: one object,
// nothing after it, and no member that names no field of v. Each failure
// is told by its type, never by the text of an error: the body's size by
// http.MaxBytesError, its syntax by json.SyntaxError, a value of the wrong
// type by json.UnmarshalTypeError, and an unknown member by walking the
// body against v's type (unknownField), which also gives its full path.
func decodeBody(w http.ResponseWriter, r *http.Request, v any) *apiError {
	_, e := decode(w, r, v, nil)
	return e
}

// MergePatchType is RFC 7396's media type of a JSON merge patch, which
// every PATCH takes as well as application/json.
const MergePatchType = "application/merge-patch+json"

// decodePatch is decodeBody for a PATCH, a JSON merge patch (RFC 7396):
// it takes MergePatchType too, and a member that names no field of v but
// one of the resource (of resource's type) is a field the PATCH does not
// change, FIELD_NOT_PATCHABLE, rather than one that does not exist. It
// returns the body's JSON, for what the typed value cannot tell: whether
// a member was given, as null.
func decodePatch(w http.ResponseWriter, r *http.Request, v, resource any) (json.RawMessage, *apiError) {
	return decode(w, r, v, resource)
}

// decode is decodeBody, and decodePatch when resource is not nil.
func decode(w http.ResponseWriter, r *http.Request, v, resource any) (json.RawMessage, *apiError) {
	// The Content-Type was held to the route's before the handler ran
	// (contentType).
	raw, e := readJSON(w, r)
	if e != nil {
		return nil, e
	}
	if path := unknownField(raw, reflect.TypeOf(v), ""); path != "" {
		if resource != nil && unknownField(raw, reflect.TypeOf(resource), "") != path {
			return nil, invalid(proxy.FieldError{Field: path, Reason: ReasonFieldNotPatchable, Description: "is not a field a PATCH changes"})
		}
		return nil, invalid(proxy.FieldError{Field: path, Reason: ReasonFieldUnknown, Description: "is not a field of this resource"})
	}
	var typeErr *json.UnmarshalTypeError
	switch err := json.Unmarshal(raw, v); {
	case errors.As(err, &typeErr):
		field := typeErr.Field
		if field == "" {
			field = "body"
		}
		return nil, invalid(proxy.FieldError{Field: field, Reason: ReasonFieldWrongType, Description: fmt.Sprintf("must be a JSON %s, not %s", jsonType(typeErr.Type), typeErr.Value)})
	case err != nil:
		return nil, notJSON("does not decode: " + err.Error())
	}
	return raw, nil
}

// readJSON reads a body of at most MaxBodyBytes that is one JSON value
// and nothing after it.
func readJSON(w http.ResponseWriter, r *http.Request) (json.RawMessage, *apiError) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		e := newError(http.StatusRequestEntityTooLarge, ReasonBodyTooLarge, "the body is over %d bytes", MaxBodyBytes)
		e.violations = proxy.FieldErrors{{Field: "body", Reason: ReasonBodyTooLarge, Description: fmt.Sprintf("larger than %d bytes", MaxBodyBytes)}}
		return nil, e
	case err != nil:
		return nil, notJSON("could not be read: " + err.Error())
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	var raw json.RawMessage
	var syntax *json.SyntaxError
	switch err := dec.Decode(&raw); {
	case errors.Is(err, io.EOF):
		return nil, notJSON("is empty: want a JSON object")
	case errors.As(err, &syntax):
		return nil, notJSON(fmt.Sprintf("is not valid JSON at byte %d", syntax.Offset))
	case err != nil:
		// A value cut short: io.ErrUnexpectedEOF.
		return nil, notJSON("is not valid JSON: it ends before its value does")
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, notJSON("holds something after its JSON value: want one object")
	}
	return raw, nil
}

func notJSON(description string) *apiError {
	return invalid(proxy.FieldError{Field: "body", Reason: ReasonBodyNotJSON, Description: description})
}

// unknownField returns the path of the first member of raw, in the body's
// order, that names no field of t (by its exact JSON name), or "". Values
// that are not what t expects are left to the typed decode to report.
func unknownField(raw json.RawMessage, t reflect.Type, path string) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Struct:
		fields := jsonFields(t)
		var found string
		eachMember(raw, func(key string, value json.RawMessage) bool {
			ft, ok := fields[key]
			if !ok {
				found = join(path, key)
			} else {
				found = unknownField(value, ft, join(path, key))
			}
			return found == ""
		})
		return found
	case reflect.Slice, reflect.Array:
		var items []json.RawMessage
		if json.Unmarshal(raw, &items) != nil {
			return ""
		}
		for i, item := range items {
			if p := unknownField(item, t.Elem(), path+"["+strconv.Itoa(i)+"]"); p != "" {
				return p
			}
		}
	case reflect.Map:
		var found string
		eachMember(raw, func(key string, value json.RawMessage) bool {
			found = unknownField(value, t.Elem(), join(path, key))
			return found == ""
		})
		return found
	}
	return ""
}

// eachMember calls fn with each member of the JSON object raw, in order,
// while fn returns true. raw that is no object calls it never.
func eachMember(raw json.RawMessage, fn func(key string, value json.RawMessage) bool) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return
	}
	for dec.More() {
		tok, err := dec.Token()
		key, ok := tok.(string)
		if err != nil || !ok {
			return
		}
		var value json.RawMessage
		if dec.Decode(&value) != nil || !fn(key, value) {
			return
		}
	}
}

// jsonFields are a struct's fields by their JSON names.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct:
			// An embedded struct's fields are the outer one's, as
			// encoding/json decodes them.
			maps.Copy(out, jsonFields(f.Type))
		case !f.IsExported() || name == "-":
		case name == "":
			out[f.Name] = f.Type
		default:
			out[name] = f.Type
		}
	}
	return out
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func jsonType(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "string"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Uint, reflect.Uint32, reflect.Uint64:
		return "integer in range"
	case reflect.Slice:
		return "array"
	case reflect.Struct, reflect.Map:
		return "object"
	}
	return t.String()
}
