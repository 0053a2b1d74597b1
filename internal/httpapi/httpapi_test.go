package httpapi_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"cloud.google.com/go/firestore"
	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/internal/clock"
	"github.com/egress-proxies/egress/internal/emulatortest"
	"github.com/egress-proxies/egress/internal/httpapi"
	"github.com/egress-proxies/egress/internal/proxy"
	"github.com/egress-proxies/egress/internal/store"
)

func TestMain(m *testing.M) { emulatortest.Main(m) }

// server is the API over a Firestore store of the test's own project.
func server(t *testing.T, quota int) (*httptest.Server, *store.Store, *bytes.Buffer) {
	t.Helper()
	emulatortest.Firestore(t)
	client, err := firestore.NewClient(context.Background(), emulatortest.ProjectID(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	st := store.New(client)
	var logs bytes.Buffer
	var mu sync.Mutex
	log := slog.New(slog.NewJSONHandler(lockedWriter{&mu, &logs}, nil))
	api := httpapi.New(st, clock.Real{}, log, httpapi.Options{
		Quota: quota, DefaultProvider: "mock", KnownProvider: func(t string) bool { return t == "mock" || t == "gcp" },
	})
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	return srv, st, &logs
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

// apiErr is the error body.
type apiErr struct {
	Error struct {
		Code    int    `json:"code"`
		Status  string `json:"status"`
		Message string `json:"message"`
		Details []struct {
			Field       string `json:"field"`
			Description string `json:"description"`
		} `json:"details"`
	} `json:"error"`
}

func do(t *testing.T, method, url, contentType string, body io.Reader) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, body)
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, b
}

const goodSpec = `{"placement":{"region":"us-central1","zone":"us-central1-a"},"allowedSourceRanges":["203.0.113.0/24"]}`

func body(name, spec string) string { return fmt.Sprintf(`{"name":%q,"spec":%s}`, name, spec) }

func TestBadInput(t *testing.T) {
	srv, st, _ := server(t, 20)
	const coll = "/v1/namespaces/team-a/proxies"
	spec := func(mut string) string { // goodSpec with extra or replaced members
		return `{"placement":{"region":"us-central1","zone":"us-central1-a"},"allowedSourceRanges":["203.0.113.0/24"],` + mut + `}`
	}
	cases := map[string]struct {
		method, path, contentType, body string
		code                            int
		status, field                   string
	}{
		"BodyNotJSON":          {body: `{"name":`, code: 400, status: "INVALID_ARGUMENT", field: "body"},
		"BodyTwoValues":        {body: body("a", goodSpec) + `{}`, code: 400, status: "INVALID_ARGUMENT", field: "body"},
		"BodyTooLarge":         {body: body("big", spec(`"cloudInit":"`+strings.Repeat("x", 1<<20)+`"`)), code: 413, status: "INVALID_ARGUMENT", field: "body"},
		"UnknownTopField":      {body: `{"name":"a","spec":` + goodSpec + `,"color":"red"}`, code: 400, status: "INVALID_ARGUMENT", field: "color"},
		"UnknownSpecField":     {body: body("a", spec(`"size":"xl"`)), code: 400, status: "INVALID_ARGUMENT", field: "size"},
		"NameWrongType":        {body: `{"name":7,"spec":` + goodSpec + `}`, code: 400, status: "INVALID_ARGUMENT", field: "name"},
		"PortWrongType":        {body: body("a", spec(`"port":"3128"`)), code: 400, status: "INVALID_ARGUMENT", field: "spec.port"},
		"PortOverflowsInt32":   {body: body("a", spec(`"port":99999999999`)), code: 400, status: "INVALID_ARGUMENT", field: "spec.port"},
		"RangesWrongType":      {body: `{"name":"a","spec":{"placement":{"region":"us-central1","zone":"us-central1-a"},"allowedSourceRanges":"203.0.113.0/24"}}`, code: 400, status: "INVALID_ARGUMENT", field: "spec.allowedSourceRanges"},
		"WrongContentType":     {contentType: "text/plain", body: body("a", goodSpec), code: 415, status: "INVALID_ARGUMENT"},
		"NameMissing":          {body: `{"spec":` + goodSpec + `}`, code: 400, status: "INVALID_ARGUMENT", field: "name"},
		"NameUppercase":        {body: body("Egress", goodSpec), code: 400, status: "INVALID_ARGUMENT", field: "name"},
		"NameTooLong":          {body: body(strings.Repeat("a", 64), goodSpec), code: 400, status: "INVALID_ARGUMENT", field: "name"},
		"NameTrailingDash":     {body: body("egress-", goodSpec), code: 400, status: "INVALID_ARGUMENT", field: "name"},
		"NamespaceNotLabel":    {path: "/v1/namespaces/Team_A/proxies", body: body("a", goodSpec), code: 400, status: "INVALID_ARGUMENT", field: "namespace"},
		"RegionMissing":        {body: body("a", `{"placement":{"zone":"us-central1-a"},"allowedSourceRanges":["203.0.113.0/24"]}`), code: 400, status: "INVALID_ARGUMENT", field: "spec.placement.region"},
		"RegionMalformed":      {body: body("a", `{"placement":{"region":"Central","zone":"us-central1-a"},"allowedSourceRanges":["203.0.113.0/24"]}`), code: 400, status: "INVALID_ARGUMENT", field: "spec.placement.region"},
		"ZoneOutsideRegion":    {body: body("a", `{"placement":{"region":"us-central1","zone":"europe-west4-a"},"allowedSourceRanges":["203.0.113.0/24"]}`), code: 400, status: "INVALID_ARGUMENT", field: "spec.placement.zone"},
		"IPPolicyUnknown":      {body: body("a", spec(`"ipPolicy":"Sticky"`)), code: 400, status: "INVALID_ARGUMENT", field: "spec.ipPolicy"},
		"MaxAgeNotDuration":    {body: body("a", spec(`"maxAge":"a day"`)), code: 400, status: "INVALID_ARGUMENT", field: "spec.maxAge"},
		"MaxAgeTooShort":       {body: body("a", spec(`"maxAge":"5m"`)), code: 400, status: "INVALID_ARGUMENT", field: "spec.maxAge"},
		"MachineTypeMalformed": {body: body("a", `{"placement":{"region":"us-central1","zone":"us-central1-a","machineType":"E2 Micro"},"allowedSourceRanges":["203.0.113.0/24"]}`), code: 400, status: "INVALID_ARGUMENT", field: "spec.placement.machineType"},
		"ImageMalformed":       {body: body("a", `{"placement":{"region":"us-central1","zone":"us-central1-a","image":"debian-12"},"allowedSourceRanges":["203.0.113.0/24"]}`), code: 400, status: "INVALID_ARGUMENT", field: "spec.placement.image"},
		"PortZeroAfterDefault": {body: body("a", spec(`"port":-1`)), code: 400, status: "INVALID_ARGUMENT", field: "spec.port"},
		"PortTooHigh":          {body: body("a", spec(`"port":65536`)), code: 400, status: "INVALID_ARGUMENT", field: "spec.port"},
		"CloudInitTooLarge":    {body: body("a", spec(`"cloudInit":"`+strings.Repeat("x", 256<<10+1)+`"`)), code: 400, status: "INVALID_ARGUMENT", field: "spec.cloudInit"},
		"CloudInitBoth":        {body: body("a", spec(`"cloudInit":"#cloud-config","cloudInitSecret":"projects/p/secrets/s/versions/1"`)), code: 400, status: "INVALID_ARGUMENT", field: "spec.cloudInitSecret"},
		"CloudInitSecretForm":  {body: body("a", spec(`"cloudInitSecret":"my-secret"`)), code: 400, status: "INVALID_ARGUMENT", field: "spec.cloudInitSecret"},
		"CIDRMalformed":        {body: body("a", `{"placement":{"region":"us-central1","zone":"us-central1-a"},"allowedSourceRanges":["10.0.0.0/8","10.0.0.300/32"]}`), code: 400, status: "INVALID_ARGUMENT", field: "spec.allowedSourceRanges[1]"},
		"CIDRMissing":          {body: body("a", `{"placement":{"region":"us-central1","zone":"us-central1-a"}}`), code: 400, status: "INVALID_ARGUMENT", field: "spec.allowedSourceRanges"},
		"UnknownProvider":      {body: body("a", spec(`"provider":"azure"`)), code: 400, status: "INVALID_ARGUMENT", field: "spec.provider"},
		"ConnectPortZero":      {body: body("a", spec(`"connectPorts":[443,0]`)), code: 400, status: "INVALID_ARGUMENT", field: "spec.connectPorts[1]"},
		"ConnectPortTwice":     {body: body("a", spec(`"connectPorts":[443,443]`)), code: 400, status: "INVALID_ARGUMENT", field: "spec.connectPorts[1]"},
		"CIDRMappedIPv6":       {body: body("a", `{"placement":{"region":"us-central1","zone":"us-central1-a"},"allowedSourceRanges":["::ffff:10.0.0.0/104"]}`), code: 400, status: "INVALID_ARGUMENT", field: "spec.allowedSourceRanges[0]"},
		"GetNameNotLabel":      {method: "GET", path: coll + "/Not_A_Label", code: 400, status: "INVALID_ARGUMENT", field: "name"},
		"GetAbsent":            {method: "GET", path: coll + "/absent", code: 404, status: "NOT_FOUND"},
		"DeleteAbsent":         {method: "DELETE", path: coll + "/absent", code: 404, status: "NOT_FOUND"},
		"ListPageSizeZero":     {method: "GET", path: coll + "?pageSize=0", code: 400, status: "INVALID_ARGUMENT", field: "pageSize"},
		"ListPageSizeHuge":     {method: "GET", path: coll + "?pageSize=100000", code: 400, status: "INVALID_ARGUMENT", field: "pageSize"},
		"ListBadPageToken":     {method: "GET", path: coll + "?pageToken=%21%21", code: 400, status: "INVALID_ARGUMENT", field: "pageToken"},
		"PutOnCollection":      {method: "PUT", path: coll, body: body("a", goodSpec), code: 405, status: "METHOD_NOT_ALLOWED"},
		"PatchOnResource":      {method: "PATCH", path: coll + "/a", body: `{}`, code: 405, status: "METHOD_NOT_ALLOWED"},
		"PostOnResource":       {method: "POST", path: coll + "/a", body: body("a", goodSpec), code: 405, status: "METHOD_NOT_ALLOWED"},
		"UnknownPath":          {method: "GET", path: "/v2/whatever", code: 404, status: "NOT_FOUND"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			method, path, ct := tc.method, tc.path, tc.contentType
			if method == "" {
				method = "POST"
			}
			if path == "" {
				path = coll
			}
			if ct == "" && tc.body != "" {
				ct = "application/json"
			}
			resp, b := do(t, method, srv.URL+path, ct, strings.NewReader(tc.body))
			var got apiErr
			if err := json.Unmarshal(b, &got); err != nil {
				t.Fatalf("status %d, body not a JSON error: %v\n%s", resp.StatusCode, err, b)
			}
			if resp.StatusCode != tc.code || got.Error.Code != tc.code || got.Error.Status != tc.status {
				t.Errorf("HTTP %d, error %d %s; want %d %s\n%s", resp.StatusCode, got.Error.Code, got.Error.Status, tc.code, tc.status, b)
			}
			if tc.field != "" {
				var fields []string
				for _, d := range got.Error.Details {
					fields = append(fields, d.Field)
					if d.Description == "" {
						t.Errorf("field %s has no description", d.Field)
					}
				}
				if len(fields) == 0 || fields[0] != tc.field {
					t.Errorf("fields %v, want first %q\n%s", fields, tc.field, b)
				}
			}
			if tc.code == 405 && resp.Header.Get("Allow") == "" {
				t.Error("405 without an Allow header")
			}
		})
	}
	// Nothing was written by any of them.
	for _, ns := range []string{"team-a", "Team_A"} {
		page, _, err := st.List(context.Background(), ns, 100, "")
		if err != nil {
			t.Fatal(err)
		}
		if len(page) != 0 {
			t.Errorf("bad requests wrote %d documents in %s", len(page), ns)
		}
	}
}

// TestEveryRuleAtOnce checks that validation reports all broken rules.
func TestEveryRuleAtOnce(t *testing.T) {
	srv, _, _ := server(t, 20)
	resp, b := do(t, "POST", srv.URL+"/v1/namespaces/team-a/proxies", "application/json", strings.NewReader(
		body("Bad_Name", `{"provider":"azure","placement":{"region":"us-central1","zone":"us-east1-b"},"port":70000,"allowedSourceRanges":["nope"]}`)))
	var got apiErr
	if err := json.Unmarshal(b, &got); err != nil || resp.StatusCode != 400 {
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	var fields []string
	for _, d := range got.Error.Details {
		fields = append(fields, d.Field)
	}
	want := []string{"name", "spec.provider", "spec.placement.zone", "spec.port", "spec.allowedSourceRanges[0]"}
	if diff := cmp.Diff(want, fields); diff != "" {
		t.Errorf("fields (-want +got):\n%s", diff)
	}
}

type resource struct {
	Name        string       `json:"name"`
	Namespace   string       `json:"namespace"`
	UID         string       `json:"uid"`
	Generation  int64        `json:"generation"`
	Spec        proxy.Spec   `json:"spec"`
	Status      proxy.Status `json:"status"`
	RequestedBy string       `json:"requestedBy"`
	DeleteTime  *string      `json:"deleteRequestTime"`
}

func TestLifecycle(t *testing.T) {
	srv, _, logs := server(t, 100)
	base := srv.URL + "/v1/namespaces/team-l/proxies"
	secretInit := "#cloud-config\nwrite_files: [{path: /etc/token, content: s3cr3t-token}]\n"
	spec := `{"placement":{"region":"us-central1","zone":"us-central1-a"},"allowedSourceRanges":["203.0.113.0/24"],"cloudInit":` + mustJSON(secretInit) + `}`

	// An ID token as Cloud Run passes it on (already verified there).
	claims := base64.RawURLEncoding.EncodeToString([]byte(`{"email":"alice@example.com","aud":"x"}`))
	req, _ := http.NewRequest("POST", base, strings.NewReader(body("first", spec)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer eyJhbGciOiJSUzI1NiJ9."+claims+".c2lnbmF0dXJl")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var created resource
	json.NewDecoder(resp.Body).Decode(&created)
	resp.Body.Close()
	if resp.StatusCode != 201 || resp.Header.Get("Location") != "/v1/namespaces/team-l/proxies/first" {
		t.Fatalf("create: %d Location %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	if created.Status.Phase != proxy.PhasePending || created.UID == "" || created.Generation != 1 || created.Spec.Port != 3128 ||
		created.Spec.Provider != "mock" || created.RequestedBy != "alice@example.com" {
		t.Errorf("created resource %+v: want Pending, a uid, generation 1, defaults filled, requestedBy alice", created)
	}

	// The same POST again: 200 and the same uid. Another spec: 409.
	resp, b := do(t, "POST", base, "application/json", strings.NewReader(body("first", spec)))
	var again resource
	json.Unmarshal(b, &again)
	if resp.StatusCode != 200 || again.UID != created.UID {
		t.Errorf("repeated create: %d uid %s, want 200 and uid %s", resp.StatusCode, again.UID, created.UID)
	}
	resp, b = do(t, "POST", base, "application/json", strings.NewReader(body("first", strings.Replace(spec, "203.0.113.0/24", "198.51.100.0/24", 1))))
	if resp.StatusCode != 409 || !strings.Contains(string(b), "ALREADY_EXISTS") {
		t.Errorf("create with another spec: %d %s, want 409 ALREADY_EXISTS", resp.StatusCode, b)
	}

	// 44 more, then list in pages of 20: three pages, every name once.
	want := []string{"first"}
	for i := range 44 {
		name := fmt.Sprintf("p-%02d", i)
		if resp, b := do(t, "POST", base, "application/json", strings.NewReader(body(name, `{"placement":{"region":"us-central1","zone":"us-central1-b"},"allowedSourceRanges":["10.0.0.0/8"]}`))); resp.StatusCode != 201 {
			t.Fatalf("create %s: %d %s", name, resp.StatusCode, b)
		}
		want = append(want, name)
	}
	var got []string
	pages := 0
	for token := ""; ; pages++ {
		resp, b := do(t, "GET", base+"?pageSize=20&pageToken="+token, "", nil)
		if resp.StatusCode != 200 {
			t.Fatalf("list: %d %s", resp.StatusCode, b)
		}
		var page struct {
			Proxies       []resource `json:"proxies"`
			NextPageToken string     `json:"nextPageToken"`
		}
		json.Unmarshal(b, &page)
		for _, p := range page.Proxies {
			got = append(got, p.Name)
		}
		if token = page.NextPageToken; token == "" {
			pages++
			break
		}
	}
	if pages != 3 {
		t.Errorf("45 proxies in pages of 20: %d pages, want 3", pages)
	}
	// Ordered by name: "first" sorts before "p-00".
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("listed (-want +got):\n%s", diff)
	}

	// Delete: 202 Deleting, idempotent; the document stays for the reconciler.
	for range 2 {
		resp, b := do(t, "DELETE", base+"/first", "", nil)
		var del resource
		json.Unmarshal(b, &del)
		if resp.StatusCode != 202 || del.Status.Phase != proxy.PhaseDeleting || del.DeleteTime == nil {
			t.Errorf("delete: %d phase %s, want 202 Deleting with deleteRequestTime", resp.StatusCode, del.Status.Phase)
		}
	}
	resp, b = do(t, "GET", base+"/first", "", nil)
	if resp.StatusCode != 200 || !strings.Contains(string(b), `"Deleting"`) {
		t.Errorf("get after delete: %d %s", resp.StatusCode, b)
	}
	if resp, _ := do(t, "GET", srv.URL+"/healthz", "", nil); resp.StatusCode != 200 {
		t.Errorf("healthz: %d", resp.StatusCode)
	}

	// One structured line per request, with no cloud-init and no token.
	for _, secret := range []string{"s3cr3t-token", claims, "c2lnbmF0dXJl"} {
		if strings.Contains(logs.String(), secret) {
			t.Errorf("the request log contains %q", secret)
		}
	}
	var line map[string]any
	first, _, _ := strings.Cut(logs.String(), "\n")
	if err := json.Unmarshal([]byte(first), &line); err != nil {
		t.Fatalf("log line is not JSON: %s", first)
	}
	hr, _ := line["httpRequest"].(map[string]any)
	if hr["requestMethod"] != "POST" || hr["status"] != float64(201) || hr["requestUrl"] != "/v1/namespaces/team-l/proxies" {
		t.Errorf("request log line %s: want httpRequest with method, url and status", first)
	}
}

func TestConcurrentCreates(t *testing.T) {
	srv, st, _ := server(t, 20)
	base := srv.URL + "/v1/namespaces/team-c/proxies"
	post := func(name string) int {
		resp, _ := do(t, "POST", base, "application/json", strings.NewReader(body(name, goodSpec)))
		return resp.StatusCode
	}
	codes := make([]int, 2)
	var wg sync.WaitGroup
	for i := range codes {
		wg.Go(func() { codes[i] = post("same") })
	}
	wg.Wait()
	if !(codes[0] == 201 && (codes[1] == 200 || codes[1] == 409)) && !(codes[1] == 201 && (codes[0] == 200 || codes[0] == 409)) {
		t.Errorf("two concurrent creates of one name: %v, want one 201 and one 200 or 409", codes)
	}

	codes = make([]int, 25)
	for i := range codes {
		wg.Go(func() { codes[i] = post(fmt.Sprintf("q-%02d", i)) })
	}
	wg.Wait()
	count := map[int]int{}
	for _, c := range codes {
		count[c]++
	}
	// One slot went to "same": 19 of the 25 fit.
	if diff := cmp.Diff(map[int]int{201: 19, 429: 6}, count); diff != "" {
		t.Errorf("25 concurrent creates with 19 slots left (-want +got):\n%s", diff)
	}
	page, _, err := st.List(context.Background(), "team-c", 100, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(page) != 20 {
		t.Errorf("namespace holds %d documents, want its quota of 20", len(page))
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// TestProxyURL: once the reconciler has stored the proxy's credentials and
// its endpoint, the resource shows the URL a client configures, in a get
// and in a list; the request log never holds it.
func TestProxyURL(t *testing.T) {
	srv, st, logs := server(t, 20)
	base := srv.URL + "/v1/namespaces/team-u/proxies"
	if resp, b := do(t, "POST", base, "application/json", strings.NewReader(body("p", goodSpec))); resp.StatusCode != 201 || strings.Contains(string(b), "proxyURL") {
		t.Fatalf("create: %d %s, want 201 without a proxyURL (no endpoint yet)", resp.StatusCode, b)
	}
	p, err := st.Get(context.Background(), proxy.Key{Namespace: "team-u", Name: "p"})
	if err != nil {
		t.Fatal(err)
	}
	p.Reconciler.Credentials = proxy.Credentials{Username: "u7Qk2pLm9xZa", Password: "Zq8Rk3Vw1Ls5Nt7Bx2Cy4Dm6"}
	p.Status.Phase, p.Status.IP, p.Status.Endpoint = proxy.PhaseReady, "192.0.2.7", "192.0.2.7:3128"
	if _, err := st.UpdateStatus(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	const want = "http://u7Qk2pLm9xZa:Zq8Rk3Vw1Ls5Nt7Bx2Cy4Dm6@192.0.2.7:3128"
	var got struct {
		Status struct {
			ProxyURL string `json:"proxyURL"`
		} `json:"status"`
	}
	_, b := do(t, "GET", base+"/p", "", nil)
	json.Unmarshal(b, &got)
	if got.Status.ProxyURL != want {
		t.Errorf("get: proxyURL %q, want %q", got.Status.ProxyURL, want)
	}
	var page struct {
		Proxies []struct{ Status struct{ ProxyURL string } }
	}
	_, b = do(t, "GET", base, "", nil)
	json.Unmarshal(b, &page)
	if len(page.Proxies) != 1 || page.Proxies[0].Status.ProxyURL != want {
		t.Errorf("list: %s, want the one proxy with proxyURL %q", b, want)
	}
	if strings.Contains(logs.String(), p.Reconciler.Credentials.Password) {
		t.Error("the request log holds the proxy's password")
	}
	if strings.Contains(string(b), "reconciler") || strings.Contains(string(b), `"password"`) {
		t.Errorf("the list shows the document's private part: %s", b)
	}
}
