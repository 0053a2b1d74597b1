package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// alerts is each alert policy of deploy/terraform with what its incident
// tells the person it pages: the same text, Terraform's references
// written as what they name (a resource's name, a variable in capitals:
// PROJECT_ID, REGION).
func alerts(root string) (string, error) {
	m, err := readModule(filepath.Join(root, "deploy/terraform"))
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for _, p := range m.blocks("resource", "google_monitoring_alert_policy") {
		name, err := m.text(p.Body, "display_name")
		if err != nil {
			return "", err
		}
		severity, _ := m.text(p.Body, "severity")
		title := strings.TrimPrefix(name, "Egress proxies: ")
		fmt.Fprintf(&b, "### %s\n\n", strings.ToUpper(title[:1])+title[1:])
		for _, doc := range p.Body.Blocks {
			if doc.Type != "documentation" {
				continue
			}
			subject, err := m.text(doc.Body, "subject")
			if err != nil {
				return "", err
			}
			content, err := m.text(doc.Body, "content")
			if err != nil {
				return "", err
			}
			fmt.Fprintf(&b, "Severity %s; the incident's subject: *%s*.\n\n%s\n\n", strings.ToLower(severity), subject, strings.TrimSpace(content))
		}
	}
	return b.String(), nil
}

// module is deploy/terraform's files, parsed.
type module struct {
	src map[string][]byte
	// paths are the files', in the order of files.
	paths []string
	files []*hclsyntax.Body
}

// readModule parses the .tf files of dir, but those named skip.
func readModule(dir string, skip ...string) (*module, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.tf"))
	if err != nil {
		return nil, err
	}
	m := &module{src: map[string][]byte{}}
	for _, p := range paths {
		if slices.Contains(skip, filepath.Base(p)) {
			continue
		}
		raw, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		f, diags := hclsyntax.ParseConfig(raw, p, hcl.InitialPos)
		if diags.HasErrors() {
			return nil, diags
		}
		m.src[p] = raw
		m.paths = append(m.paths, p)
		m.files = append(m.files, f.Body.(*hclsyntax.Body))
	}
	return m, nil
}

// blocks are the blocks of a type whose first label is label ("" for
// any), in the files' order.
func (m *module) blocks(typ, label string) []*hclsyntax.Block {
	var out []*hclsyntax.Block
	for _, f := range m.files {
		for _, b := range f.Blocks {
			if b.Type == typ && (label == "" || (len(b.Labels) > 0 && b.Labels[0] == label)) {
				out = append(out, b)
			}
		}
	}
	return out
}

// reference is ${…} in a template.
var reference = regexp.MustCompile(`\$\{([^}]+)\}`)

// text is an attribute's string or template as written, each reference in
// it replaced by what it names.
func (m *module) text(body *hclsyntax.Body, name string) (string, error) {
	a, ok := body.Attributes[name]
	if !ok {
		return "", fmt.Errorf("no attribute %s at %s", name, body.SrcRange)
	}
	r := a.Expr.Range()
	src := string(m.src[r.Filename][r.Start.Byte:r.End.Byte])
	switch {
	case strings.HasPrefix(src, "<<-EOT"):
		body := strings.TrimPrefix(strings.TrimPrefix(src, "<<-EOT"), "\n")
		body = strings.TrimRight(strings.TrimSuffix(strings.TrimRight(body, " \n"), "EOT"), " \n")
		src = dedent(body)
	case strings.HasPrefix(src, `"`):
		src = strings.ReplaceAll(strings.Trim(src, `"`), `\"`, `"`)
	}
	var err error
	out := reference.ReplaceAllStringFunc(src, func(ref string) string {
		s, e := m.resolve(reference.FindStringSubmatch(ref)[1])
		if e != nil && err == nil {
			err = e
		}
		return s
	})
	return out, err
}

// resolve writes a reference as what it names.
func (m *module) resolve(ref string) (string, error) {
	parts := strings.Split(ref, ".")
	switch {
	case parts[0] == "var" && len(parts) == 2:
		return strings.ToUpper(parts[1]), nil
	case parts[0] == "local" && len(parts) == 2:
		for _, l := range m.blocks("locals", "") {
			if _, ok := l.Body.Attributes[parts[1]]; ok {
				return m.text(l.Body, parts[1])
			}
		}
	case len(parts) == 3:
		for _, r := range m.blocks("resource", parts[0]) {
			if len(r.Labels) < 2 || r.Labels[1] != parts[1] {
				continue
			}
			if parts[2] == "email" {
				id, err := m.text(r.Body, "account_id")
				return id + "@PROJECT_ID.iam.gserviceaccount.com", err
			}
			return m.text(r.Body, parts[2])
		}
	}
	return "", fmt.Errorf("cannot write ${%s} as what it names", ref)
}

// dedent removes the indentation a heredoc's lines share.
func dedent(s string) string {
	lines := strings.Split(s, "\n")
	indent := -1
	for _, l := range lines {
		if strings.TrimSpace(l) == "" {
			continue
		}
		if n := len(l) - len(strings.TrimLeft(l, " ")); indent < 0 || n < indent {
			indent = n
		}
	}
	for i, l := range lines {
		if len(l) >= indent && indent > 0 {
			lines[i] = l[indent:]
		}
	}
	return strings.Join(lines, "\n")
}
