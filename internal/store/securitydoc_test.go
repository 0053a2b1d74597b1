package store_test

import (
	"bufio"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/egress-proxies/egress/internal/proxy"
)

// securityDoc is the page whose table says, for each field of the proxy
// document, who reads it and which test holds that.
const securityDoc = "../../docs/concepts/security.md"

// tableHeading starts the section of that table.
const tableHeading = "## The proxy document, field by field"

// TestSecurityTableCoversTheDocument: every field the store writes into
// a proxy document (the Firestore tags of proxy.Proxy, down to the leaves)
// is named in the security page's table, itself or by a field that holds
// it; every field the table names is one of the document's; and every
// test a row names exists. A new field of the document fails here until
// someone says who reads it.
func TestSecurityTableCoversTheDocument(t *testing.T) {
	fields := map[string]bool{}
	documentFields(reflect.TypeOf(proxy.Proxy{}), "", fields)
	rows := securityRows(t)
	if len(rows) == 0 {
		t.Fatalf("%s has no table under %q", securityDoc, tableHeading)
	}
	named := map[string]bool{}
	tests := definedTests(t)
	code := regexp.MustCompile("`([^`]+)`")
	for _, r := range rows {
		for _, m := range code.FindAllStringSubmatch(r.fields, -1) {
			named[m[1]] = true
			if !fields[m[1]] {
				t.Errorf("the table names %q, which is no field of the proxy document", m[1])
			}
		}
		var held []string
		for _, m := range code.FindAllStringSubmatch(r.tests, -1) {
			name, _, _ := strings.Cut(m[1], "/")
			held = append(held, m[1])
			if !tests[name] {
				t.Errorf("the row of %s names test %s, which does not exist", r.fields, m[1])
			}
		}
		if len(held) == 0 {
			t.Errorf("the row of %s names no test", r.fields)
		}
	}
	var missing []string
	for f := range fields {
		covered := false
		for p := f; p != ""; p = parent(p) {
			covered = covered || named[p]
		}
		if !covered && !hasChildren(f, fields) {
			missing = append(missing, f)
		}
	}
	slices.Sort(missing)
	if len(missing) > 0 {
		t.Errorf("fields of the proxy document missing from the table of %s: %v", securityDoc, missing)
	}
}

// documentFields adds the Firestore paths of t's fields under prefix,
// each struct's own and its fields', to out.
func documentFields(t reflect.Type, prefix string, out map[string]bool) {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || t == reflect.TypeOf(time.Time{}) {
		return
	}
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("firestore"), ",")
		if name == "-" || !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out[prefix+name] = true
		documentFields(f.Type, prefix+name+".", out)
	}
}

func parent(path string) string {
	i := strings.LastIndex(path, ".")
	if i < 0 {
		return ""
	}
	return path[:i]
}

// hasChildren reports whether f holds fields of its own: a struct is
// covered by its fields' rows.
func hasChildren(f string, fields map[string]bool) bool {
	for g := range fields {
		if strings.HasPrefix(g, f+".") {
			return true
		}
	}
	return false
}

type securityRow struct{ fields, tests string }

// securityRows are the rows of the table under tableHeading: the first
// cell (the fields) and the last (the tests).
func securityRows(t *testing.T) []securityRow {
	t.Helper()
	f, err := os.Open(securityDoc)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var rows []securityRow
	in, header := false, 0
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "## "):
			in = line == tableHeading
		case in && strings.HasPrefix(line, "|"):
			header++
			if header <= 2 {
				continue // the heading and its rule
			}
			cells := strings.Split(strings.Trim(line, "|"), "|")
			rows = append(rows, securityRow{fields: cells[0], tests: cells[len(cells)-1]})
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return rows
}

// definedTests are the names of the repository's test functions.
func definedTests(t *testing.T) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	re := regexp.MustCompile(`(?m)^func (Test\w+)\(`)
	err := filepath.WalkDir("../..", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, m := range re.FindAllStringSubmatch(string(b), -1) {
			out[m[1]] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
