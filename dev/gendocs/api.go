package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/egress-proxies/egress/internal/httpapi"
)

// openAPI is the part of the OpenAPI document the reference reads.
type openAPI struct {
	Paths      map[string]map[string]json.RawMessage `json:"paths"`
	Components struct {
		Schemas    map[string]schema    `json:"schemas"`
		Responses  map[string]response  `json:"responses"`
		Parameters map[string]parameter `json:"parameters"`
	} `json:"components"`
}

type parameter struct {
	Ref    string `json:"$ref"`
	Name   string `json:"name"`
	In     string `json:"in"`
	Schema schema `json:"schema"`
}

type operation struct {
	Parameters  []parameter `json:"parameters"`
	Summary     string      `json:"summary"`
	Description string      `json:"description"`
	RequestBody *struct {
		Content map[string]struct {
			Schema schema `json:"schema"`
		} `json:"content"`
	} `json:"requestBody"`
	Responses map[string]response `json:"responses"`
}

type response struct {
	Ref         string `json:"$ref"`
	Description string `json:"description"`
	Content     map[string]struct {
		Schema schema `json:"schema"`
	} `json:"content"`
	Headers map[string]json.RawMessage `json:"headers"`
}

type schema struct {
	Ref         string            `json:"$ref"`
	Type        any               `json:"type"`
	Format      string            `json:"format"`
	Description string            `json:"description"`
	Required    []string          `json:"required"`
	Properties  map[string]schema `json:"properties"`
	Items       *schema           `json:"items"`
	Enum        []any             `json:"enum"`
	Minimum     *float64          `json:"minimum"`
	Maximum     *float64          `json:"maximum"`
	MaxItems    *int              `json:"maxItems"`
	Default     any               `json:"default"`
	OneOf       []schema          `json:"oneOf"`
	AddProps    any               `json:"additionalProperties"`
}

// readOpenAPI reads the document under root, as make docs may have just
// written it (the clouds' words: apiclouds.go); with root "", the one the
// API embeds.
func readOpenAPI(root string) (openAPI, error) {
	var doc openAPI
	raw := httpapi.OpenAPI()
	if root != "" {
		var err error
		if raw, err = os.ReadFile(filepath.Join(root, openAPIFile)); err != nil {
			return doc, err
		}
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		return doc, fmt.Errorf("internal/httpapi/openapi.json: %w", err)
	}
	return doc, nil
}

// methods in the order a route's calls are listed.
var methods = []string{"get", "put", "post", "patch", "delete"}

// operations are the document's calls in the order of httpapi.Routes (the
// API's own order), then those outside it (/healthz, the document).
func (doc openAPI) operations() []struct {
	method, path string
	op           operation
} {
	type call = struct {
		method, path string
		op           operation
	}
	var out []call
	seen := map[string]bool{}
	add := func(method, path string) {
		method = strings.ToUpper(method)
		raw, ok := doc.Paths[path][strings.ToLower(method)]
		if !ok || seen[method+" "+path] {
			return
		}
		var op operation
		if json.Unmarshal(raw, &op) != nil {
			return
		}
		seen[method+" "+path] = true
		out = append(out, call{method, path, op})
	}
	for _, r := range httpapi.Routes() {
		add(r.Method, r.Path)
	}
	paths := make([]string, 0, len(doc.Paths))
	for p := range doc.Paths {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		for _, m := range methods {
			add(m, p)
		}
	}
	return out
}

// routes is the table of the API's calls: what each does, and its answers.
func routes(root string) (string, error) {
	doc, err := readOpenAPI(root)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	b.WriteString("| call | what it does | body or query | success | errors |\n| --- | --- | --- | --- | --- |\n")
	for _, c := range doc.operations() {
		what := c.op.Summary
		if c.op.Description != "" {
			what += ". " + c.op.Description
		}
		body := "—"
		if c.op.RequestBody != nil {
			body = schemaRef(c.op.RequestBody.Content["application/json"].Schema)
		}
		if q := doc.query(c.op); q != "" {
			body = "query: " + q
		}
		var ok, errs []string
		for _, code := range sortedCodes(c.op.Responses) {
			r := c.op.Responses[code]
			if r.Ref != "" || !strings.HasPrefix(code, "2") {
				if code != "default" {
					errs = append(errs, code)
				}
				continue
			}
			s := code
			if ref := schemaRef(r.Content["application/json"].Schema); ref != "—" {
				s += " " + ref
			}
			if _, loc := r.Headers["Location"]; loc {
				s += " + `Location`"
			}
			ok = append(ok, s+": "+r.Description)
		}
		fmt.Fprintf(&b, "| `%s %s` | %s | %s | %s | %s |\n", c.method, c.path, cell(what), body, cell(strings.Join(ok, " ")), strings.Join(errs, ", "))
	}
	return b.String(), nil
}

// errorAnswers is what each error answer of the API means.
func errorAnswers(root string) (string, error) {
	doc, err := readOpenAPI(root)
	if err != nil {
		return "", err
	}
	// The status each shared answer is given as, read off the calls.
	status := map[string]string{}
	for _, c := range doc.operations() {
		for code, r := range c.op.Responses {
			if name, ok := strings.CutPrefix(r.Ref, "#/components/responses/"); ok && status[name] == "" {
				status[name] = code
			}
		}
	}
	names := make([]string, 0, len(doc.Components.Responses))
	for n := range doc.Components.Responses {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool {
		if status[names[i]] != status[names[j]] {
			return status[names[i]] < status[names[j]]
		}
		return names[i] < names[j]
	})
	var b strings.Builder
	b.WriteString("| status | answer | when |\n| --- | --- | --- |\n")
	for _, n := range names {
		s := status[n]
		if s == "default" {
			s = "any other"
		}
		fmt.Fprintf(&b, "| %s | `%s` | %s |\n", s, n, cell(doc.Components.Responses[n].Description))
	}
	return b.String(), nil
}

// bodies are the document's schemas, each with its fields.
func bodies(root string) (string, error) {
	doc, err := readOpenAPI(root)
	if err != nil {
		return "", err
	}
	names := make([]string, 0, len(doc.Components.Schemas))
	for n := range doc.Components.Schemas {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	for i, n := range names {
		s := doc.Components.Schemas[n]
		if i > 0 {
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "### %s\n\n", n)
		if s.Description != "" {
			fmt.Fprintf(&b, "%s\n\n", s.Description)
		}
		if len(s.Properties) == 0 {
			fmt.Fprintf(&b, "%s.\n", typeOf(s))
			continue
		}
		b.WriteString("| field | type | meaning |\n| --- | --- | --- |\n")
		fields := make([]string, 0, len(s.Properties))
		for f := range s.Properties {
			fields = append(fields, f)
		}
		sort.Strings(fields)
		for _, f := range fields {
			p := s.Properties[f]
			name := "`" + f + "`"
			if slices.Contains(s.Required, f) {
				name += " (required)"
			}
			fmt.Fprintf(&b, "| %s | %s | %s |\n", name, cell(typeOf(p)), cell(describe(p)))
		}
	}
	return b.String(), nil
}

// schemaRef names a schema: a link to its section, or its type.
func schemaRef(s schema) string {
	if name, ok := strings.CutPrefix(s.Ref, "#/components/schemas/"); ok {
		return "[" + name + "](#" + strings.ToLower(name) + ")"
	}
	if s.Type == nil {
		return "—"
	}
	return typeOf(s)
}

// typeOf is a schema's type as a reader writes it.
func typeOf(s schema) string {
	switch {
	case s.Ref != "":
		return schemaRef(s)
	case s.Items != nil:
		return "array of " + typeOf(*s.Items)
	case len(s.OneOf) > 0:
		var ts []string
		for _, o := range s.OneOf {
			ts = append(ts, typeOf(o))
		}
		return strings.Join(ts, " or ")
	}
	t := fmt.Sprint(s.Type)
	if ts, ok := s.Type.([]any); ok {
		var parts []string
		for _, x := range ts {
			parts = append(parts, fmt.Sprint(x))
		}
		t = strings.Join(parts, " or ")
	}
	if s.Type == nil {
		t = "any"
	}
	if s.Format != "" {
		t += " (" + s.Format + ")"
	}
	if t == "object" && s.AddProps != nil {
		if m, ok := s.AddProps.(map[string]any); ok {
			if ref, ok := m["$ref"].(string); ok {
				t = "map of " + schemaRef(schema{Ref: ref})
			} else if tt, ok := m["type"]; ok {
				t = fmt.Sprintf("map of %v", tt)
			}
		}
	}
	return t
}

// describe is a field's meaning, with the bounds and values its schema
// holds it to.
func describe(s schema) string {
	var parts []string
	if s.Description != "" {
		parts = append(parts, s.Description)
	}
	if len(s.Enum) > 0 {
		var vs []string
		for _, v := range s.Enum {
			vs = append(vs, fmt.Sprintf("`%v`", v))
		}
		parts = append(parts, "one of "+strings.Join(vs, ", "))
	}
	if s.Minimum != nil && s.Maximum != nil {
		parts = append(parts, fmt.Sprintf("%v to %v", *s.Minimum, *s.Maximum))
	}
	if s.Items != nil && s.Items.Minimum != nil && s.Items.Maximum != nil {
		parts = append(parts, fmt.Sprintf("each %v to %v", *s.Items.Minimum, *s.Items.Maximum))
	}
	if s.MaxItems != nil {
		parts = append(parts, fmt.Sprintf("at most %d", *s.MaxItems))
	}
	return strings.Join(parts, "; ")
}

// sortedCodes are a call's answers, success first, by status.
func sortedCodes(rs map[string]response) []string {
	codes := make([]string, 0, len(rs))
	for c := range rs {
		codes = append(codes, c)
	}
	sort.Strings(codes)
	return codes
}

// query is a call's query parameters, with their bounds and defaults.
func (doc openAPI) query(op operation) string {
	var out []string
	for _, p := range op.Parameters {
		if name, ok := strings.CutPrefix(p.Ref, "#/components/parameters/"); ok {
			p = doc.Components.Parameters[name]
		}
		if p.In != "query" {
			continue
		}
		q := "`" + p.Name + "`"
		var notes []string
		if s := p.Schema; s.Minimum != nil && s.Maximum != nil {
			notes = append(notes, fmt.Sprintf("%v to %v", *s.Minimum, *s.Maximum))
		}
		if p.Schema.Default != nil {
			notes = append(notes, fmt.Sprintf("default %v", p.Schema.Default))
		}
		if len(notes) > 0 {
			q += " (" + strings.Join(notes, ", ") + ")"
		}
		out = append(out, q)
	}
	return strings.Join(out, ", ")
}
