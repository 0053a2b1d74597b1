package digitalocean

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"gopkg.in/yaml.v3"
)

// keptPaths are the part of DigitalOcean's API description the provider
// and its fake use, kept in testdata: the Droplets and their actions, the
// reserved IPs and theirs, the firewalls, the tags, the regions and
// sizes, the account, and the actions.
var keptPaths = []string{
	"/v2/account",
	"/v2/actions",
	"/v2/actions/{action_id}",
	"/v2/droplets",
	"/v2/droplets/{droplet_id}",
	"/v2/droplets/{droplet_id}/actions",
	"/v2/droplets/{droplet_id}/actions/{action_id}",
	"/v2/firewalls",
	"/v2/firewalls/{firewall_id}",
	"/v2/firewalls/{firewall_id}/droplets",
	"/v2/firewalls/{firewall_id}/tags",
	"/v2/firewalls/{firewall_id}/rules",
	"/v2/regions",
	"/v2/reserved_ips",
	"/v2/reserved_ips/{reserved_ip}",
	"/v2/reserved_ips/{reserved_ip}/actions",
	"/v2/reserved_ips/{reserved_ip}/actions/{action_id}",
	"/v2/sizes",
	"/v2/tags",
	"/v2/tags/{tag_id}",
	"/v2/tags/{tag_id}/resources",
}

// openapiFile is the kept part, one file with every reference inside it.
const openapiFile = "testdata/digitalocean-openapi.json"

// TestBundleTheOpenAPIDescription writes openapiFile from a checkout of
// github.com/digitalocean/openapi, whose description is split over some
// 2,900 files: DIGITALOCEAN_OPENAPI names its specification directory.
// Without it the test is skipped: the file in testdata is what the other
// tests read, and testdata/README.md says where it came from.
//
//	DIGITALOCEAN_OPENAPI=/path/to/openapi/specification go test -run TestBundleTheOpenAPIDescription ./internal/provider/digitalocean/
func TestBundleTheOpenAPIDescription(t *testing.T) {
	src := os.Getenv("DIGITALOCEAN_OPENAPI")
	if src == "" {
		t.Skip("DIGITALOCEAN_OPENAPI is not set: nothing to bundle (testdata/README.md)")
	}
	b := &bundler{files: map[string]any{}}
	rootFile := filepath.Join(src, "DigitalOcean-public.v2.yaml")
	root, err := b.load(rootFile)
	if err != nil {
		t.Fatal(err)
	}
	doc := root.(map[string]any)
	// The top-level tags are the reference's chapters, not the API.
	delete(doc, "tags")
	delete(doc, "x-tagGroups")
	paths := doc["paths"].(map[string]any)
	for p := range paths {
		if !slices.Contains(keptPaths, p) {
			delete(paths, p)
		}
	}
	if len(paths) != len(keptPaths) {
		t.Fatalf("%d of the %d kept paths are in the description", len(paths), len(keptPaths))
	}
	// Each operation is a reference to a file of its own, which OpenAPI
	// 3.0 does not provide for, so no loader follows it: the operations
	// are inlined, their references made relative to the root, and the
	// loader resolves the rest and brings it inside (InternalizeRefs).
	for _, item := range paths {
		ops := item.(map[string]any)
		for method, op := range ops {
			m, ok := op.(map[string]any)
			ref, isRef := m["$ref"].(string)
			if !ok || !isRef {
				continue
			}
			file := filepath.Join(filepath.Dir(rootFile), ref)
			opDoc, err := b.load(file)
			if err != nil {
				t.Fatal(err)
			}
			dir, _ := filepath.Rel(filepath.Dir(rootFile), filepath.Dir(file))
			ops[method] = rebase(opDoc, dir)
		}
	}
	trimmed, err := yaml.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(filepath.Dir(rootFile), ".egress-bundle.yaml")
	if err := os.WriteFile(tmp, trimmed, 0o644); err != nil {
		t.Fatal(err)
	}
	defer os.Remove(tmp)
	loader := openapi3.NewLoader()
	loader.IsExternalRefsAllowed = true
	loaded, err := loader.LoadFromFile(tmp)
	if err != nil {
		t.Fatal(err)
	}
	loaded.InternalizeRefs(context.Background(), nil)
	out, err := json.MarshalIndent(loaded, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	// Loaded again from the one file: a valid description on its own.
	again, err := openapi3.NewLoader().LoadFromData(out)
	if err != nil {
		t.Fatalf("the bundle does not load on its own: %v", err)
	}
	// The description's own examples do not all match its schemas (a
	// Droplet's next_backup_window is null in an example and not nullable
	// in the schema): the examples are not the API, and are not checked.
	if err := again.Validate(context.Background(), openapi3.DisableExamplesValidation()); err != nil {
		t.Fatalf("the bundle is not a valid description: %v", err)
	}
	if err := os.WriteFile(openapiFile, append(bytes.TrimSpace(out), '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: %d paths, %d bytes", openapiFile, again.Paths.Len(), len(out))
}

// bundler inlines every $ref of a description split over files: the
// description's operations are themselves references to files (which
// OpenAPI 3.0 does not provide for, so no loader follows them), and every
// reference is relative to the file it is written in.
type bundler struct {
	files map[string]any
}

func (b *bundler) load(file string) (any, error) {
	if v, ok := b.files[file]; ok {
		return v, nil
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var v any
	if err := yaml.Unmarshal(data, &v); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	v = stringKeys(v)
	b.files[file] = v
	return v, nil
}

// stringKeys makes YAML's maps JSON's: a response's status 200 is a key
// "200".
func stringKeys(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = stringKeys(e)
		}
		return x
	case map[any]any:
		m := map[string]any{}
		for k, e := range x {
			m[fmt.Sprint(k)] = stringKeys(e)
		}
		return m
	case []any:
		for i, e := range x {
			x[i] = stringKeys(e)
		}
		return x
	}
	return v
}

// rebase returns a copy of v, an operation written in dir, with its
// references (and its discriminators' mappings, which are references too)
// made relative to the root; the code samples (x-codeSamples), which are
// the reference's and not the API's, are left out.
func rebase(v any, dir string) any {
	switch x := v.(type) {
	case map[string]any:
		m := map[string]any{}
		for k, e := range x {
			switch {
			case k == "x-codeSamples":
			case k == "$ref":
				m[k] = rebaseRef(e.(string), dir)
			case k == "mapping":
				mm := map[string]any{}
				for mk, me := range e.(map[string]any) {
					mm[mk] = rebaseRef(me.(string), dir)
				}
				m[k] = mm
			default:
				m[k] = rebase(e, dir)
			}
		}
		return m
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = rebase(e, dir)
		}
		return out
	}
	return v
}

func rebaseRef(ref, dir string) string {
	if strings.HasPrefix(ref, "#") {
		return ref
	}
	file, pointer, _ := strings.Cut(ref, "#")
	out := filepath.ToSlash(filepath.Join(dir, file))
	if pointer != "" {
		out += "#" + pointer
	}
	return out
}
