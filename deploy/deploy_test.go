package deploy_test

import (
	"archive/zip"
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclparse"
	"github.com/hashicorp/hcl/v2/hclsyntax"

	"github.com/egress-proxies/egress/emulators/eventarc"
	"github.com/egress-proxies/egress/internal/app"
	"github.com/egress-proxies/egress/internal/events"
	"github.com/egress-proxies/egress/internal/metering"
	"github.com/egress-proxies/egress/internal/proxy"
	"github.com/egress-proxies/egress/internal/queue"
	"github.com/egress-proxies/egress/internal/store"
)

const terraformDir = "terraform"

// module is every block of the Terraform module, parsed for real.
type module struct {
	files  map[string]*hcl.File
	blocks []*hclsyntax.Block
}

func parseModule(t *testing.T) *module {
	t.Helper()
	return parseModuleAt(t, terraformDir)
}

// parseModuleAt parses the module of dir.
func parseModuleAt(t *testing.T, dir string) *module {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(dir, "*.tf"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no Terraform files in %s: %v", dir, err)
	}
	p := hclparse.NewParser()
	m := &module{files: map[string]*hcl.File{}}
	for _, path := range paths {
		f, diags := p.ParseHCLFile(path)
		if diags.HasErrors() {
			t.Fatalf("%s does not parse: %s", path, diags.Error())
		}
		m.files[path] = f
		m.blocks = append(m.blocks, f.Body.(*hclsyntax.Body).Blocks...)
	}
	return m
}

// resource returns the block `resource TYPE NAME`, or nil.
func (m *module) resource(typ, name string) *hclsyntax.Block {
	for _, b := range m.blocks {
		if b.Type == "resource" && len(b.Labels) == 2 && b.Labels[0] == typ && b.Labels[1] == name {
			return b
		}
	}
	return nil
}

func (m *module) resources(typ string) []*hclsyntax.Block {
	var out []*hclsyntax.Block
	for _, b := range m.blocks {
		if b.Type == "resource" && b.Labels[0] == typ {
			out = append(out, b)
		}
	}
	return out
}

// literal is the value of an attribute that is a plain string.
func literal(t *testing.T, body *hclsyntax.Body, name string) string {
	t.Helper()
	a, ok := body.Attributes[name]
	if !ok {
		return ""
	}
	v, diags := a.Expr.Value(nil)
	if diags.HasErrors() {
		t.Fatalf("%s is not a literal at %s", name, a.SrcRange)
	}
	return v.AsString()
}

func nested(b *hclsyntax.Body, typ string) []*hclsyntax.Block {
	var out []*hclsyntax.Block
	for _, n := range b.Blocks {
		if n.Type == typ {
			out = append(out, n)
		}
	}
	return out
}

// TestModuleHasWhatProductionNeeds checks every block the deploy needs is
// there and typed as expected.
func TestModuleHasWhatProductionNeeds(t *testing.T) {
	m := parseModule(t)
	for _, r := range [][2]string{
		{"google_project_service", "apis"},
		{"google_firestore_database", "default"},
		{"google_firestore_field", "progress_time"},
		{"google_firestore_field", "proxy_uid"},
		{"google_firestore_field", "callhome_expiry"},
		{"google_pubsub_topic", "reconcile"},
		{"google_pubsub_topic", "gc"},
		{"google_pubsub_topic", "dead_letter"},
		{"google_pubsub_subscription", "reconcile"},
		{"google_cloud_scheduler_job", "gc"},
		{"google_cloudfunctions2_function", "api"},
		{"google_cloudfunctions2_function", "reconcile"},
		{"google_cloudfunctions2_function", "gc"},
		{"google_service_account", "api"},
		{"google_service_account", "reconcile"},
		{"google_service_account", "gc"},
		{"google_service_account", "proxy_vm"},
		{"google_compute_firewall", "proxy"},
		{"google_cloud_run_service_iam_member", "api_invokers"},
		{"google_logging_metric", "invocations"},
		{"google_logging_metric", "usage"},
		{"google_logging_metric", "latency"},
		{"google_logging_metric", "ready_latency"},
		{"google_logging_metric", "fleet"},
		{"google_logging_metric", "gc_summary"},
		{"google_logging_metric", "boot_failures"},
		{"google_logging_metric", "quota_errors"},
		{"google_monitoring_dashboard", "egress"},
		{"google_monitoring_alert_policy", "dead_letter"},
		{"google_monitoring_alert_policy", "gc_failing"},
		{"google_monitoring_alert_policy", "gc_not_running"},
		{"google_monitoring_alert_policy", "boot_failures"},
		{"google_monitoring_alert_policy", "quota"},
	} {
		if m.resource(r[0], r[1]) == nil {
			t.Errorf("resource %s.%s is missing", r[0], r[1])
		}
	}
	if db := m.resource("google_firestore_database", "default"); db != nil {
		if got := literal(t, db.Body, "type"); got != "FIRESTORE_NATIVE" {
			t.Errorf("Firestore database type %q, want FIRESTORE_NATIVE", got)
		}
	}
	// Each function runs as its own service account.
	accounts := map[string]bool{}
	for _, fn := range m.resources("google_cloudfunctions2_function") {
		sc := nested(fn.Body, "service_config")
		if len(sc) != 1 {
			t.Fatalf("function %s has no service_config", fn.Labels[1])
		}
		a, ok := sc[0].Body.Attributes["service_account_email"]
		if !ok {
			t.Errorf("function %s has no service account of its own", fn.Labels[1])
			continue
		}
		ref := string(a.SrcRange.SliceBytes(m.src(t, a.SrcRange.Filename)))
		if accounts[ref] {
			t.Errorf("function %s shares its service account %s", fn.Labels[1], ref)
		}
		accounts[ref] = true
	}
	// The API is never public; nothing is, but the engine binary Hetzner's
	// servers download with no credential (its public bucket's objects,
	// read-only: hetzner.tf).
	for _, b := range m.blocks {
		if b.Type == "resource" && slices.Equal(b.Labels, []string{"google_storage_bucket_iam_member", "engine_public_read"}) &&
			literal(t, b.Body, "role") == "roles/storage.objectViewer" {
			continue
		}
		for _, a := range b.Body.Attributes {
			src := string(a.SrcRange.SliceBytes(m.src(t, a.SrcRange.Filename)))
			if a.Name == "member" && (strings.Contains(src, `"allUsers"`) || strings.Contains(src, `"allAuthenticatedUsers"`)) {
				t.Errorf("%s grants to everyone at %s", b.Labels, a.SrcRange)
			}
		}
	}
	// Every variable and output is documented.
	for _, b := range m.blocks {
		if (b.Type == "variable" || b.Type == "output") && literal(t, b.Body, "description") == "" {
			t.Errorf("%s %q has no description", b.Type, b.Labels[0])
		}
	}
	// The firewall opens the proxy tag from the allowed ranges.
	if fw := m.resource("google_compute_firewall", "proxy"); fw != nil {
		for _, attr := range []string{"source_ranges", "target_tags"} {
			if _, ok := fw.Body.Attributes[attr]; !ok {
				t.Errorf("firewall rule has no %s", attr)
			}
		}
	}
}

// TestCallHomeBucketsExpire: the TTL policy names the collection and the
// field the store writes the call-home buckets' expiry to.
func TestCallHomeBucketsExpire(t *testing.T) {
	r := parseModule(t).resource("google_firestore_field", "callhome_expiry")
	if r == nil {
		t.Fatal("no google_firestore_field.callhome_expiry")
	}
	got := [2]string{literal(t, r.Body, "collection"), literal(t, r.Body, "field")}
	if want := [2]string{store.CallHomesCollection, store.CallHomeExpiryField}; got != want {
		t.Errorf("the TTL policy is on %v, the store writes the expiry to %v", got, want)
	}
	var ttl bool
	for _, b := range r.Body.Blocks {
		ttl = ttl || b.Type == "ttl_config"
	}
	if !ttl {
		t.Error("google_firestore_field.callhome_expiry has no ttl_config")
	}
}

func (m *module) src(t *testing.T, filename string) []byte {
	t.Helper()
	f, ok := m.files[filename]
	if !ok {
		t.Fatalf("no parsed file %s", filename)
	}
	return f.Bytes
}

// TestTerraformMatchesTheCode reads both sides: entry points, topics, event
// types, the document pattern and environment variables named in Terraform
// must be what the code registers and reads, so a rename on one side alone
// fails here.
func TestTerraformMatchesTheCode(t *testing.T) {
	m := parseModule(t)

	var entryPoints []string
	for _, fn := range m.resources("google_cloudfunctions2_function") {
		for _, bc := range nested(fn.Body, "build_config") {
			entryPoints = append(entryPoints, literal(t, bc.Body, "entry_point"))
		}
	}
	sort.Strings(entryPoints)
	if diff := cmp.Diff(registeredFunctions(t), entryPoints); diff != "" {
		t.Errorf("entry points (-registered in functions/ +named in Terraform):\n%s", diff)
	}

	var topics []string
	for _, tp := range m.resources("google_pubsub_topic") {
		topics = append(topics, literal(t, tp.Body, "name"))
	}
	sort.Strings(topics)
	wantTopics := []string{eventarc.DeadLetterTopic, queue.GCTopic, queue.ReconcileTopic, queue.CallHomeTopic}
	sort.Strings(wantTopics)
	if diff := cmp.Diff(wantTopics, topics); diff != "" {
		t.Errorf("topics (-code +Terraform):\n%s", diff)
	}

	eventTypes := map[string]bool{}
	var patterns []string
	for _, fn := range m.resources("google_cloudfunctions2_function") {
		for _, et := range nested(fn.Body, "event_trigger") {
			eventTypes[literal(t, et.Body, "event_type")] = true
			for _, f := range nested(et.Body, "event_filters") {
				if literal(t, f.Body, "attribute") == "document" {
					patterns = append(patterns, literal(t, f.Body, "value"))
				}
			}
		}
	}
	for typ := range eventTypes {
		if typ != events.DocumentWritten && typ != queue.MessagePublishedType {
			t.Errorf("Terraform triggers on %q, which Reconcile and CollectGarbage do not take", typ)
		}
	}
	if !eventTypes[events.DocumentWritten] || !eventTypes[queue.MessagePublishedType] {
		t.Errorf("event types %v: want both %s and %s", eventTypes, events.DocumentWritten, queue.MessagePublishedType)
	}
	// The warm pools' patterns are Eventarc triggers of their own (a
	// function has one event_trigger), of the same event type.
	for _, tr := range m.resources("google_eventarc_trigger") {
		for _, mc := range nested(tr.Body, "matching_criteria") {
			switch literal(t, mc.Body, "attribute") {
			case "document":
				patterns = append(patterns, literal(t, mc.Body, "value"))
			case "type":
				if typ := literal(t, mc.Body, "value"); typ != events.DocumentWritten {
					t.Errorf("an Eventarc trigger takes %q, which Reconcile does not", typ)
				}
			}
		}
	}
	sort.Strings(patterns)
	wantPatterns := []string{proxy.DocumentPattern, proxy.PoolPattern, proxy.MemberPattern}
	sort.Strings(wantPatterns)
	if diff := cmp.Diff(wantPatterns, patterns); diff != "" {
		t.Errorf("Firestore trigger document patterns (-code +Terraform):\n%s", diff)
	}

	// The event flow's page names every topic and every trigger, so a new
	// one is not left out of what a reader is told reaches the functions.
	flow, err := os.ReadFile("../docs/concepts/event-flow.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range append(wantTopics, wantPatterns...) {
		if !strings.Contains(string(flow), "`"+name+"`") {
			t.Errorf("docs/concepts/event-flow.md does not name `%s`, a topic or trigger pattern of Terraform and the code", name)
		}
	}
}

// TestTerraformSetsEveryVariable: each function's environment in Terraform
// is exactly the production variables of app.Vars that function reads. A
// variable added to the code's table and not to Terraform, or set in
// Terraform and read by no code, fails here.
func TestTerraformSetsEveryVariable(t *testing.T) {
	m := parseModule(t)
	fns := m.resources("google_cloudfunctions2_function")
	if len(fns) != len(app.Functions) {
		t.Fatalf("%d functions in Terraform, want %d", len(fns), len(app.Functions))
	}
	for _, fn := range fns {
		var entry string
		for _, bc := range nested(fn.Body, "build_config") {
			entry = literal(t, bc.Body, "entry_point")
		}
		got := functionEnv(t, m, fn)
		if diff := cmp.Diff(app.Names(app.Function(entry), true), got); diff != "" {
			t.Errorf("environment of %s (-what app.Vars says it reads +what Terraform sets):\n%s", entry, diff)
		}
	}
}

// TestTerraformScalesAsTheCodeSays: each function's instance count and
// request concurrency in Terraform are app.Deployed's, which the local
// stack applies and the benchmark measures.
func TestTerraformScalesAsTheCodeSays(t *testing.T) {
	m := parseModule(t)
	got := map[app.Function]app.Scale{}
	for _, fn := range m.resources("google_cloudfunctions2_function") {
		var entry string
		for _, bc := range nested(fn.Body, "build_config") {
			entry = literal(t, bc.Body, "entry_point")
		}
		for _, sc := range nested(fn.Body, "service_config") {
			got[app.Function(entry)] = app.Scale{
				MaxInstances: number(t, sc.Body, "max_instance_count"),
				Concurrency:  number(t, sc.Body, "max_instance_request_concurrency"),
			}
		}
	}
	if diff := cmp.Diff(app.Deployed, got); diff != "" {
		t.Errorf("scale of the functions (-app.Deployed +Terraform):\n%s", diff)
	}
}

// number is the value of an attribute that is a plain number.
func number(t *testing.T, body *hclsyntax.Body, name string) int {
	t.Helper()
	a, ok := body.Attributes[name]
	if !ok {
		t.Fatalf("%s is not set at %s", name, body.SrcRange)
	}
	v, diags := a.Expr.Value(nil)
	if diags.HasErrors() {
		t.Fatalf("%s is not a literal at %s", name, a.SrcRange)
	}
	n, _ := v.AsBigFloat().Int64()
	return int(n)
}

// TestMetricsMatchTheInvocationLine checks that the log-based metrics read
// the line internal/metering writes: its message, and one metric for each
// usage field, named as the line names it.
func TestMetricsMatchTheInvocationLine(t *testing.T) {
	m := parseModule(t)
	var fields []string
	for _, b := range m.blocks {
		if b.Type != "locals" {
			continue
		}
		a, ok := b.Body.Attributes["usage_metrics"]
		if !ok {
			continue
		}
		v, diags := a.Expr.Value(nil)
		if diags.HasErrors() {
			t.Fatalf("usage_metrics is not a literal map at %s", a.SrcRange)
		}
		for _, f := range v.AsValueMap() {
			fields = append(fields, f.AsString())
		}
	}
	sort.Strings(fields)
	var want []string
	usage := reflect.TypeFor[metering.Usage]()
	for i := range usage.NumField() {
		name, _, _ := strings.Cut(usage.Field(i).Tag.Get("json"), ",")
		want = append(want, name)
	}
	sort.Strings(want)
	if diff := cmp.Diff(want, fields); diff != "" {
		t.Errorf("usage fields (-metering.Usage +usage_metrics in Terraform):\n%s", diff)
	}

	filter := `jsonPayload.message=\"` + metering.Message + `\"`
	for _, b := range m.blocks {
		if b.Type != "locals" {
			continue
		}
		if a, ok := b.Body.Attributes["invocation_filter"]; ok {
			if src := string(a.SrcRange.SliceBytes(m.src(t, a.SrcRange.Filename))); !strings.Contains(src, filter) {
				t.Errorf("invocation_filter does not select %s: %s", filter, src)
			}
			return
		}
	}
	t.Error("no invocation_filter in the module's locals")
}

// registeredFunctions reads the names functions/ registers with the
// functions framework (functions.HTTP and functions.CloudEvent calls).
func registeredFunctions(t *testing.T) []string {
	t.Helper()
	var names []string
	for _, call := range calls(t, "../functions") {
		sel, ok := call.Fun.(*ast.SelectorExpr)
		if !ok || len(call.Args) == 0 {
			continue
		}
		if x, ok := sel.X.(*ast.Ident); ok && x.Name == "functions" && (sel.Sel.Name == "HTTP" || sel.Sel.Name == "CloudEvent") {
			if lit, ok := call.Args[0].(*ast.BasicLit); ok {
				name, _ := strconv.Unquote(lit.Value)
				names = append(names, name)
			}
		}
	}
	sort.Strings(names)
	return names
}

var envName = regexp.MustCompile(`^[A-Z][A-Z0-9_]+$`)

// calls returns every call expression in a folder's non-test Go files.
func calls(t *testing.T, dir string) []*ast.CallExpr {
	t.Helper()
	fset := token.NewFileSet()
	paths, _ := filepath.Glob(filepath.Join(dir, "*.go"))
	var out []*ast.CallExpr
	for _, p := range paths {
		if strings.HasSuffix(p, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, p, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if c, ok := n.(*ast.CallExpr); ok {
				out = append(out, c)
			}
			return true
		})
	}
	return out
}

// functionEnv collects the keys of a function's environment_variables:
// object literals, merge() calls and the locals they name.
func functionEnv(t *testing.T, m *module, fn *hclsyntax.Block) []string {
	t.Helper()
	locals := map[string]hclsyntax.Expression{}
	for _, b := range m.blocks {
		if b.Type == "locals" {
			for name, a := range b.Body.Attributes {
				locals[name] = a.Expr
			}
		}
	}
	seen := map[string]bool{}
	var visit func(e hclsyntax.Expression)
	visit = func(e hclsyntax.Expression) {
		switch x := e.(type) {
		case *hclsyntax.ObjectConsExpr:
			for _, item := range x.Items {
				k, diags := item.KeyExpr.Value(nil)
				if diags.HasErrors() || !envName.MatchString(k.AsString()) {
					t.Fatalf("environment key at %s is not a variable name", item.KeyExpr.Range())
				}
				seen[k.AsString()] = true
			}
		case *hclsyntax.FunctionCallExpr:
			for _, a := range x.Args {
				visit(a)
			}
		case *hclsyntax.ScopeTraversalExpr:
			if x.Traversal.RootName() != "local" || len(x.Traversal) != 2 {
				t.Fatalf("environment at %s is neither an object, a merge nor a local", x.Range())
			}
			name := x.Traversal[1].(hcl.TraverseAttr).Name
			l, ok := locals[name]
			if !ok {
				t.Fatalf("local.%s is not defined", name)
			}
			visit(l)
		default:
			t.Fatalf("environment at %s is neither an object, a merge nor a local", e.Range())
		}
	}
	for _, sc := range nested(fn.Body, "service_config") {
		if a, ok := sc.Body.Attributes["environment_variables"]; ok {
			visit(a.Expr)
		}
	}
	var out []string
	for k := range seen {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// TestPackagedSourceBuilds packages the source, unpacks it in a temporary
// folder and builds it as the Go buildpack does — a generated main that
// blank-imports the root package and starts the functions framework — then
// finds each entry point by name on the running binary.
func TestPackagedSourceBuilds(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.zip"), filepath.Join(dir, "b.zip")
	for _, out := range []string{a, b} {
		cmd := exec.Command("go", "run", "./deploy/package-functions", "-o", out)
		cmd.Dir = ".."
		if msg, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("packaging: %v\n%s", err, msg)
		}
	}
	za, _ := os.ReadFile(a)
	zb, _ := os.ReadFile(b)
	if !bytes.Equal(za, zb) {
		t.Error("two packagings of the same tree differ: the archive is not reproducible")
	}

	src := filepath.Join(dir, "src")
	unzip(t, a, src)
	for _, f := range []string{"go.mod", "api.go", "reconcile.go", "gc.go"} {
		if _, err := os.Stat(filepath.Join(src, f)); err != nil {
			t.Errorf("archive root lacks %s", f)
		}
	}
	mainDir := filepath.Join(src, "buildpack_main")
	os.MkdirAll(mainDir, 0o755)
	os.WriteFile(filepath.Join(mainDir, "main.go"), []byte(`// Generated as the Go buildpack generates it.
package main

import (
	"log"
	"os"

	"github.com/GoogleCloudPlatform/functions-framework-go/funcframework"

	_ "github.com/egress-proxies/egress"
)

func main() {
	if err := funcframework.StartHostPort("127.0.0.1", os.Getenv("PORT")); err != nil {
		log.Fatal(err)
	}
}
`), 0o644)
	bin := filepath.Join(dir, "server")
	// -trimpath keeps the folder out of the build cache's keys: the
	// unpacked tree is a new folder each run, and without it every run
	// compiled the whole module again (half a minute of the test's).
	build := exec.Command("go", "build", "-trimpath", "-o", bin, "./buildpack_main")
	build.Dir = src
	build.Env = append(os.Environ(), "GOFLAGS=-mod=mod")
	if msg, err := build.CombinedOutput(); err != nil {
		t.Fatalf("the packaged source does not build as the buildpack builds it: %v\n%s", err, msg)
	}

	port := freePort(t)
	srv := exec.Command(bin)
	srv.Env = append(os.Environ(), "PORT="+port, "GOOGLE_CLOUD_PROJECT=demo-package",
		// Never dialled by these requests; set so the clients need no credentials.
		"FIRESTORE_EMULATOR_HOST=127.0.0.1:1", "PUBSUB_EMULATOR_HOST=127.0.0.1:1")
	srv.Env = slices.DeleteFunc(srv.Env, func(e string) bool { return strings.HasPrefix(e, "FUNCTION_TARGET=") })
	var out bytes.Buffer
	srv.Stdout, srv.Stderr = &out, &out
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { srv.Process.Kill(); srv.Wait() }()
	base := "http://127.0.0.1:" + port
	waitListening(t, "127.0.0.1:"+port)

	// ProxyAPI answers with its own JSON errors; the event functions answer
	// a request that is no CloudEvent with 400; an unregistered name is the
	// framework's 404.
	if code, body := get(t, base+"/ProxyAPI"); code != 404 || !strings.Contains(body, `"NOT_FOUND"`) {
		t.Errorf("/ProxyAPI: %d %s, want the API's JSON 404", code, body)
	}
	for _, name := range []string{"Reconcile", "CollectGarbage"} {
		resp, err := http.Post(base+"/"+name, "application/json", strings.NewReader("{}"))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusNotFound {
			t.Errorf("/%s: 404, the entry point is not registered", name)
		}
	}
	if code, _ := get(t, base+"/NoSuchFunction"); code != http.StatusNotFound {
		t.Errorf("/NoSuchFunction: %d, want 404 (the check above would not tell a missing function)", code)
	}
	if t.Failed() {
		t.Logf("server output:\n%s", out.String())
	}
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func unzip(t *testing.T, archive, dest string) {
	t.Helper()
	zr, err := zip.OpenReader(archive)
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	for _, f := range zr.File {
		path := filepath.Join(dest, filepath.FromSlash(f.Name))
		if !strings.HasPrefix(path, dest+string(filepath.Separator)) {
			t.Fatalf("archive entry %q escapes the folder", f.Name)
		}
		os.MkdirAll(filepath.Dir(path), 0o755)
		r, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(r)
		r.Close()
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return fmt.Sprint(l.Addr().(*net.TCPAddr).Port)
}

func waitListening(t *testing.T, addr string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute) // generous: a busy machine starts it late
	for {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("nothing listens on %s", addr)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestSecretAccessIsConditionedOnThePrefix: the reconciler may read only
// the secrets under the operator's prefix. Every grant of the secret
// accessor role on the project carries an IAM condition on
// resource.name's start, built from the same variable that gives the
// functions CLOUD_INIT_SECRET_PREFIX, so the code's check and IAM's
// cannot name different secrets. The one other kind of grant is on a
// single secret the module makes (a cloud's API token, such as Hetzner's;
// the key the VMs' status credentials are derived from), to Reconcile's
// and CollectGarbage's accounts, which call the clouds and ask the VMs,
// and to no one else; every secret the module makes has that grant, and
// no other secret has any. A cloud whose credential the functions read
// from Secret Manager adds its secret and the two grants in its own file,
// and nothing here.
func TestSecretAccessIsConditionedOnThePrefix(t *testing.T) {
	m := parseModule(t)
	const role, variable = "roles/secretmanager.secretAccessor", "var.cloud_init_secret_prefix"
	var secrets []string
	for _, b := range m.resources(strings.TrimSuffix(moduleSecret, ".")) {
		secrets = append(secrets, moduleSecret+b.Labels[1])
	}
	grants, onSecrets := 0, map[string][]string{}
	for _, b := range m.blocks {
		var visit func(b *hclsyntax.Block)
		visit = func(blk *hclsyntax.Block) {
			for _, a := range blk.Body.Attributes {
				if !strings.Contains(m.source(t, a.Expr.Range()), role) {
					continue
				}
				if blk.Type == "resource" && blk.Labels[0] == "google_secret_manager_secret_iam_member" {
					secret := blk.Body.Attributes["secret_id"]
					member := blk.Body.Attributes["member"]
					if secret == nil || member == nil {
						t.Errorf("%s.%s names no secret or member", blk.Labels[0], blk.Labels[1])
						continue
					}
					on := m.source(t, secret.Expr.Range())
					if !slices.ContainsFunc(secrets, func(g string) bool { return strings.HasPrefix(on, g+"[") || on == g+".secret_id" }) {
						t.Errorf("%s.%s grants %s on %s, which is none of the secrets the module makes %v", blk.Labels[0], blk.Labels[1], role, on, secrets)
					}
					onSecrets[on] = append(onSecrets[on], m.source(t, member.Expr.Range()))
					continue
				}
				grants++
				if blk.Type != "resource" || blk.Labels[0] != "google_project_iam_member" {
					t.Errorf("%s grants %s outside a conditioned google_project_iam_member (at %s)", blk.Type, role, a.SrcRange)
					continue
				}
				conds := nested(blk.Body, "condition")
				if len(conds) != 1 {
					t.Errorf("%s.%s grants %s with no condition: project-wide secret access", blk.Labels[0], blk.Labels[1], role)
					continue
				}
				expr, ok := conds[0].Body.Attributes["expression"]
				if !ok {
					t.Errorf("the condition on %s has no expression", role)
					continue
				}
				if src := m.source(t, expr.Expr.Range()); !strings.Contains(src, "resource.name.startsWith(") || !strings.Contains(src, variable) || !strings.Contains(src, "/secrets/") {
					t.Errorf("the condition on %s is %s: want resource.name.startsWith(\"projects/…/secrets/${%s}\")", role, src, variable)
				}
				// The form the code holds a secret to: the namespace, then
				// the separator no namespace name holds. IAM cannot know a
				// proxy's namespace (one account reconciles them all); it
				// grants no secret outside the form.
				if src := m.source(t, expr.Expr.Range()); !strings.Contains(src, "{namespace}"+proxy.SecretSeparator+`\")`) {
					t.Errorf("the condition on %s is %s: want resource.name.extract(\"projects/…/secrets/${%s}{namespace}%s\") != \"\"", role, src, variable, proxy.SecretSeparator)
				}
			}
			for _, n := range blk.Body.Blocks {
				visit(n)
			}
		}
		visit(b)
	}
	if grants != 1 {
		t.Errorf("%d grants of %s on the project, want the reconciler's one", grants, role)
	}
	for on, members := range onSecrets {
		slices.Sort(members)
		if want := []string{"google_service_account.gc.member", "google_service_account.reconcile.member"}; !slices.Equal(want, members) {
			t.Errorf("%s may be read by %v, want %v: the two functions that call the provider, and no one else", on, members, want)
		}
	}
	if len(secrets) == 0 || len(onSecrets) != len(secrets) {
		t.Errorf("grants on single secrets: %v, want one set for each secret the module makes %v", onSecrets, secrets)
	}
	// The functions that check the prefix get it from the same variable.
	for _, fn := range m.resources("google_cloudfunctions2_function") {
		var entry string
		for _, bc := range nested(fn.Body, "build_config") {
			entry = literal(t, bc.Body, "entry_point")
		}
		if !app.ByName()["CLOUD_INIT_SECRET_PREFIX"].ReadBy(app.Function(entry)) {
			continue
		}
		src := envSource(t, m, fn, "CLOUD_INIT_SECRET_PREFIX")
		if !strings.Contains(src, variable) || !strings.Contains(src, "projects/${var.project_id}/secrets/") {
			t.Errorf("%s's CLOUD_INIT_SECRET_PREFIX is %s: want projects/PROJECT/secrets/ and %s", entry, src, variable)
		}
	}
}

// moduleSecret is how the module names a secret it makes, before the
// secret's resource name.
const moduleSecret = "google_secret_manager_secret."

// source is the text of a range of the module.
func (m *module) source(t *testing.T, r hcl.Range) string {
	t.Helper()
	return string(r.SliceBytes(m.src(t, r.Filename)))
}

// envSource is the source of the value a function's environment gives
// key, through the locals it names.
func envSource(t *testing.T, m *module, fn *hclsyntax.Block, key string) string {
	t.Helper()
	locals := map[string]hclsyntax.Expression{}
	for _, b := range m.blocks {
		if b.Type == "locals" {
			for name, a := range b.Body.Attributes {
				locals[name] = a.Expr
			}
		}
	}
	var resolve func(e hclsyntax.Expression) string
	resolve = func(e hclsyntax.Expression) string {
		if x, ok := e.(*hclsyntax.ScopeTraversalExpr); ok && x.Traversal.RootName() == "local" && len(x.Traversal) == 2 {
			if l, ok := locals[x.Traversal[1].(hcl.TraverseAttr).Name]; ok {
				return resolve(l)
			}
		}
		return m.source(t, e.Range())
	}
	found := ""
	var visit func(e hclsyntax.Expression)
	visit = func(e hclsyntax.Expression) {
		switch x := e.(type) {
		case *hclsyntax.ObjectConsExpr:
			for _, item := range x.Items {
				if k, diags := item.KeyExpr.Value(nil); !diags.HasErrors() && k.AsString() == key {
					found = resolve(item.ValueExpr)
				}
			}
		case *hclsyntax.FunctionCallExpr:
			for _, a := range x.Args {
				visit(a)
			}
		case *hclsyntax.ScopeTraversalExpr:
			if l, ok := locals[x.Traversal[1].(hcl.TraverseAttr).Name]; ok {
				visit(l)
			}
		}
	}
	for _, sc := range nested(fn.Body, "service_config") {
		if a, ok := sc.Body.Attributes["environment_variables"]; ok {
			visit(a.Expr)
		}
	}
	if found == "" {
		t.Fatalf("%s is not in the environment of %s", key, fn.Labels[1])
	}
	return found
}
