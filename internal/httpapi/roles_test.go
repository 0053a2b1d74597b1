package httpapi_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/internal/httpapi"
	"github.com/egress-proxies/egress/internal/proxy"
)

// callers are the columns of the role table: "" is a request with no
// identity (and no local one: production).
var callers = []struct{ name, email string }{
	{"Admin", admin}, {"Owner", owner}, {"Editor", editor}, {"Viewer", viewer}, {"NonMember", stranger}, {"Anonymous", ""},
}

// codes is a row's answer per caller, in the order of callers.
type codes [6]int

// Rows whose answers follow one pattern.
var (
	// readInTeamA: admins and every role read; outsiders are refused.
	readInTeamA = codes{200, 200, 200, 200, 403, 401}
	// ghost: what is asked in a namespace that does not exist: 404 for an
	// admin, the outsider's 403 for everyone else (team-a's members are
	// outsiders there).
	ghost = codes{404, 403, 403, 403, 403, 401}
	// adminsOnly: the call is an admin's, whatever exists.
	adminsOnly = func(adminCode int) codes { return codes{adminCode, 403, 403, 403, 403, 401} }
	// editing: admins, owners and editors; viewers and outsiders refused.
	editing = func(code int) codes { return codes{code, code, code, 403, 403, 401} }
)

// TestRoles runs the whole API for each caller against the Firestore
// emulator through the real handler, one fresh project per request: every
// status code, one audit line for each change asked for, and an outsider
// told nothing — the same body whether what it asks for exists or not.
func TestRoles(t *testing.T) {
	const (
		spec     = `{"placement":{"region":"us-central1","zone":"us-central1-a"},"allowedSourceRanges":["203.0.113.0/24"]}`
		teamA    = "/v1/namespaces/team-a"
		pool     = `{"provider":"mock","placement":{"region":"us-central1","zone":"us-central1-a"},"size":2}`
		ghostNS  = "/v1/namespaces/ghost"
		newProxy = `{"name":"new","spec":` + spec + `}`
	)
	cases := []struct {
		name, reason string
		route        string // the route's pattern, as httpapi.Routes names it
		method, path string
		body         string
		want         codes
		// same groups the rows whose outsider's answer must be identical.
		same string
		// ready makes the seeded proxy p Ready; rotated rotates it at once
		// too (its namespace's first VM of the hour); pooled puts pool
		// warm; change changes the API's options.
		ready, rotated, pooled bool
		change                 func(*httpapi.Options)
	}{
		{name: "ListNamespaces", reason: "everyone with an identity lists what they may see", route: "/v1/namespaces", method: "GET", path: "/v1/namespaces", want: codes{200, 200, 200, 200, 200, 401}},
		{name: "CreateNamespace", reason: "namespaces are made by admins only", route: "/v1/namespaces/{namespace}", method: "PUT", path: "/v1/namespaces/new-ns", body: `{}`, want: adminsOnly(201)},
		{name: "CreateNamespaceTaken", reason: "another namespace of a taken name is a conflict to an admin, and refused to anyone else", route: "/v1/namespaces/{namespace}", method: "PUT", path: teamA, body: `{"quota":3}`, want: adminsOnly(409)},
		{name: "GetNamespace", reason: "every role reads its namespace", route: "/v1/namespaces/{namespace}", method: "GET", path: teamA, want: readInTeamA, same: "get-ns"},
		{name: "GetNamespaceGhost", reason: "a namespace that does not exist", route: "/v1/namespaces/{namespace}", method: "GET", path: ghostNS, want: ghost, same: "get-ns"},
		{name: "PatchMembers", reason: "owners and admins change members", route: "/v1/namespaces/{namespace}", method: "PATCH", path: teamA, body: `{"members":{"new@example.com":"viewer"}}`, want: codes{200, 200, 403, 403, 403, 401}, same: "patch"},
		{name: "PatchQuota", reason: "only admins change a quota", route: "/v1/namespaces/{namespace}", method: "PATCH", path: teamA, body: `{"quota":5}`, want: codes{200, 403, 403, 403, 403, 401}},
		{name: "PatchGhost", reason: "a namespace that does not exist", route: "/v1/namespaces/{namespace}", method: "PATCH", path: ghostNS, body: `{"members":{"new@example.com":"viewer"}}`, want: ghost, same: "patch"},
		{name: "DeleteNamespaceWithProxies", reason: "a namespace that holds a proxy stays", route: "/v1/namespaces/{namespace}", method: "DELETE", path: teamA, want: adminsOnly(409)},
		{name: "DeleteNamespaceEmpty", reason: "an empty namespace goes, by an admin; its owner may not", route: "/v1/namespaces/{namespace}", method: "DELETE", path: "/v1/namespaces/empty", want: adminsOnly(200)},
		{name: "DeleteNamespaceGhost", reason: "a namespace that does not exist is 404 to an admin", route: "/v1/namespaces/{namespace}", method: "DELETE", path: ghostNS, want: adminsOnly(404)},
		{name: "CreateProxy", reason: "editors and above create", route: "/v1/namespaces/{namespace}/proxies", method: "POST", path: teamA + "/proxies", body: newProxy, want: editing(201), same: "create"},
		{name: "CreateProxyAgain", reason: "the same create again is the existing proxy", route: "/v1/namespaces/{namespace}/proxies", method: "POST", path: teamA + "/proxies", body: `{"name":"p","spec":` + spec + `}`, want: editing(200)},
		{name: "CreateProxyGhost", reason: "a create in a namespace that does not exist: 404 with a message to an admin, 403 to anyone else", route: "/v1/namespaces/{namespace}/proxies", method: "POST", path: ghostNS + "/proxies", body: newProxy, want: ghost, same: "create"},
		{name: "CreateProxyBadBody", reason: "bad input in a namespace is the outsider's 403 first", route: "/v1/namespaces/{namespace}/proxies", method: "POST", path: teamA + "/proxies", body: `{"name":"Bad_Name","spec":` + spec + `}`, want: codes{400, 400, 400, 403, 403, 401}, same: "create"},
		{name: "ListProxies", reason: "every role lists", route: "/v1/namespaces/{namespace}/proxies", method: "GET", path: teamA + "/proxies", want: readInTeamA, same: "list"},
		{name: "ListProxiesGhost", reason: "a namespace that does not exist", route: "/v1/namespaces/{namespace}/proxies", method: "GET", path: ghostNS + "/proxies", want: ghost, same: "list"},
		{name: "GetProxy", reason: "every role reads", route: "/v1/namespaces/{namespace}/proxies/{name}", method: "GET", path: teamA + "/proxies/p", want: readInTeamA, same: "get"},
		{name: "GetProxyAbsent", reason: "members and admins learn a proxy does not exist; outsiders do not", route: "/v1/namespaces/{namespace}/proxies/{name}", method: "GET", path: teamA + "/proxies/absent", want: codes{404, 404, 404, 404, 403, 401}, same: "get"},
		{name: "GetProxyGhost", reason: "a namespace that does not exist", route: "/v1/namespaces/{namespace}/proxies/{name}", method: "GET", path: ghostNS + "/proxies/p", want: ghost, same: "get"},
		{name: "DeleteProxy", reason: "editors and above delete", route: "/v1/namespaces/{namespace}/proxies/{name}", method: "DELETE", path: teamA + "/proxies/p", want: editing(202), same: "delete"},
		{name: "DeleteProxyAbsent", reason: "an absent proxy is 404 to those who may delete", route: "/v1/namespaces/{namespace}/proxies/{name}", method: "DELETE", path: teamA + "/proxies/absent", want: editing(404), same: "delete"},
		{name: "DeleteProxyGhost", reason: "a namespace that does not exist", route: "/v1/namespaces/{namespace}/proxies/{name}", method: "DELETE", path: ghostNS + "/proxies/p", want: ghost, same: "delete"},
		{name: "RotateProxy", reason: "editors and above rotate a Ready proxy", route: "/v1/namespaces/{namespace}/proxies/{name}:rotate", method: "POST", path: teamA + "/proxies/p:rotate", ready: true, want: editing(202), same: "rotate"},
		{name: "RotateProxyNotReady", reason: "a proxy still booting is not rotated", route: "/v1/namespaces/{namespace}/proxies/{name}:rotate", method: "POST", path: teamA + "/proxies/p:rotate", want: editing(409), same: "rotate"},
		{name: "RotateProxyTooSoon", reason: "a proxy rotated within ROTATE_MIN_INTERVAL is not rotated again", route: "/v1/namespaces/{namespace}/proxies/{name}:rotate", method: "POST", path: teamA + "/proxies/p:rotate", rotated: true, want: editing(429), same: "rotate"},
		{name: "RotateProxyPastCreatesPerHour", reason: "a namespace past NAMESPACE_CREATES_PER_HOUR rotates nothing", route: "/v1/namespaces/{namespace}/proxies/{name}:rotate", method: "POST", path: teamA + "/proxies/p:rotate", rotated: true,
			change: func(o *httpapi.Options) { o.CreatesPerHour, o.RotateMinInterval = 1, time.Second }, want: editing(429), same: "rotate"},
		{name: "CreateProxyPastCreatesPerHour", reason: "a namespace past NAMESPACE_CREATES_PER_HOUR creates nothing", route: "/v1/namespaces/{namespace}/proxies", method: "POST", path: teamA + "/proxies", body: newProxy, rotated: true,
			change: func(o *httpapi.Options) { o.CreatesPerHour = 1 }, want: editing(429), same: "create"},
		{name: "PatchLastOwner", reason: "no one removes the last owner, admins included", route: "/v1/namespaces/{namespace}", method: "PATCH", path: teamA, body: `{"members":{"owner@example.com":null}}`, want: codes{409, 409, 403, 403, 403, 401}, same: "patch"},
		{name: "CreateNamespaceNoOwner", reason: "a namespace's members include an owner", route: "/v1/namespaces/{namespace}", method: "PUT", path: "/v1/namespaces/new-ns", body: `{"members":{"dev@example.com":"editor"}}`, want: adminsOnly(400)},
		{name: "RotateProxyAbsent", reason: "an absent proxy is 404 to those who may rotate", route: "/v1/namespaces/{namespace}/proxies/{name}:rotate", method: "POST", path: teamA + "/proxies/absent:rotate", want: editing(404), same: "rotate"},
		{name: "RotateProxyGhost", reason: "a namespace that does not exist", route: "/v1/namespaces/{namespace}/proxies/{name}:rotate", method: "POST", path: ghostNS + "/proxies/p:rotate", want: ghost, same: "rotate"},
		{name: "PatchProxy", reason: "editors and above change a proxy's ranges and ports", route: "/v1/namespaces/{namespace}/proxies/{name}", method: "PATCH", path: teamA + "/proxies/p", body: `{"spec":{"connectPorts":[443,8443]}}`, want: editing(200), same: "patch-proxy"},
		{name: "PatchProxyNotPatchable", reason: "a field a PATCH does not change is named; an outsider learns nothing", route: "/v1/namespaces/{namespace}/proxies/{name}", method: "PATCH", path: teamA + "/proxies/p", body: `{"spec":{"port":8080}}`, want: codes{400, 400, 400, 403, 403, 401}, same: "patch-proxy"},
		{name: "PatchProxyAbsent", reason: "an absent proxy is 404 to those who may change it", route: "/v1/namespaces/{namespace}/proxies/{name}", method: "PATCH", path: teamA + "/proxies/absent", body: `{"spec":{"connectPorts":[443]}}`, want: editing(404), same: "patch-proxy"},
		{name: "PatchProxyGhost", reason: "a namespace that does not exist", route: "/v1/namespaces/{namespace}/proxies/{name}", method: "PATCH", path: ghostNS + "/proxies/p", body: `{"spec":{"connectPorts":[443]}}`, want: ghost, same: "patch-proxy"},
		{name: "RotateCredentials", reason: "editors and above give a proxy new credentials, however recently it rotated", route: "/v1/namespaces/{namespace}/proxies/{name}:rotateCredentials", method: "POST", path: teamA + "/proxies/p:rotateCredentials", rotated: true, want: editing(200), same: "credentials"},
		{name: "RotateCredentialsAbsent", reason: "an absent proxy is 404 to those who may rotate its credentials", route: "/v1/namespaces/{namespace}/proxies/{name}:rotateCredentials", method: "POST", path: teamA + "/proxies/absent:rotateCredentials", want: editing(404), same: "credentials"},
		{name: "RotateCredentialsGhost", reason: "a namespace that does not exist", route: "/v1/namespaces/{namespace}/proxies/{name}:rotateCredentials", method: "POST", path: ghostNS + "/proxies/p:rotateCredentials", want: ghost, same: "credentials"},
		{name: "PutPool", reason: "pools are the platform admins'", route: "/v1/pools/{pool}", method: "PUT", path: "/v1/pools/warm", body: pool, want: adminsOnly(201)},
		{name: "PutPoolResize", reason: "an admin changes a pool's size", route: "/v1/pools/{pool}", method: "PUT", path: "/v1/pools/warm", body: `{"spec":{"provider":"mock","placement":{"region":"us-central1","zone":"us-central1-a"},"size":3}}`, pooled: true, want: adminsOnly(200)},
		{name: "PutPoolMoved", reason: "a pool's placement stays", route: "/v1/pools/{pool}", method: "PUT", path: "/v1/pools/warm", body: `{"placement":{"region":"us-central1","zone":"us-central1-b"},"size":2}`, pooled: true, want: adminsOnly(400)},
		{name: "ListPools", reason: "admins list pools", route: "/v1/pools", method: "GET", path: "/v1/pools", pooled: true, want: adminsOnly(200)},
		{name: "GetPool", reason: "admins read a pool", route: "/v1/pools/{pool}", method: "GET", path: "/v1/pools/warm", pooled: true, want: adminsOnly(200)},
		{name: "GetPoolAbsent", reason: "an absent pool is 404 to an admin", route: "/v1/pools/{pool}", method: "GET", path: "/v1/pools/absent", want: adminsOnly(404)},
		{name: "DeletePool", reason: "admins delete a pool", route: "/v1/pools/{pool}", method: "DELETE", path: "/v1/pools/warm", pooled: true, want: adminsOnly(202)},
		{name: "DeletePoolAbsent", reason: "an absent pool is 404 to an admin", route: "/v1/pools/{pool}", method: "DELETE", path: "/v1/pools/absent", want: adminsOnly(404)},
		{name: "PutAccount", reason: "the cloud accounts are the platform admins'", route: "/v1/accounts/{account}", method: "PUT", path: "/v1/accounts/second", body: `{"provider":"mock"}`, want: adminsOnly(201)},
		{name: "PutAccountInvalid", reason: "an account of a provider not enabled", route: "/v1/accounts/{account}", method: "PUT", path: "/v1/accounts/second", body: `{"provider":"azure"}`, want: adminsOnly(400)},
		{name: "ListAccounts", reason: "admins list the accounts", route: "/v1/accounts", method: "GET", path: "/v1/accounts", want: adminsOnly(200)},
		{name: "GetAccountAbsent", reason: "an absent account is 404 to an admin", route: "/v1/accounts/{account}", method: "GET", path: "/v1/accounts/absent", want: adminsOnly(404)},
		{name: "DeleteAccount", reason: "admins delete an account's document, idempotently", route: "/v1/accounts/{account}", method: "DELETE", path: "/v1/accounts/absent", want: adminsOnly(204)},
	}

	audited := map[string]bool{}
	action := map[string]string{}
	covered := map[string]bool{}
	for _, r := range httpapi.Routes() {
		audited[r.Method+" "+r.Path] = r.Audited
		action[r.Method+" "+r.Path] = string(r.Permission)
	}
	// The outsider's bodies, by group.
	outsider := map[string]map[string]string{}
	for _, tc := range cases {
		key := tc.method + " " + tc.route
		if _, ok := audited[key]; !ok {
			t.Fatalf("%s: route %s is not one of httpapi.Routes()", tc.name, key)
		}
		covered[key] = true
		for i, c := range callers {
			t.Run(tc.name+"/"+c.name, func(t *testing.T) {
				var change []func(*httpapi.Options)
				if tc.change != nil {
					change = append(change, tc.change)
				}
				e := firestoreEnv(t, change...)
				p := e.seed()
				if tc.pooled {
					if resp, b := e.do(admin, "PUT", "/v1/pools/warm", pool); resp.StatusCode != 201 {
						t.Fatalf("setting up: put pool: %d %s", resp.StatusCode, b)
					}
					e.logs.Reset()
				}
				if tc.ready || tc.rotated {
					e.makeReady(p.Key())
				}
				if tc.rotated {
					if resp, b := e.do(admin, "POST", "/v1/"+p.Key().Path()+":rotate", ""); resp.StatusCode != 202 {
						t.Fatalf("setting up: rotate: %d %s", resp.StatusCode, b)
					}
					e.logs.Reset()
				}
				before := snapshot(t, e)
				resp, b := e.do(c.email, tc.method, tc.path, tc.body)
				if resp.StatusCode != tc.want[i] {
					t.Errorf("%s\n%s %s as %s: %d, want %d\n%s", tc.reason, tc.method, tc.path, c.name, resp.StatusCode, tc.want[i], b)
				}
				if resp.StatusCode >= 400 {
					if got := decodeErr(t, b); got.Error.Code != resp.StatusCode || got.reason() == "" {
						t.Errorf("error body %s: want the code %d and an ErrorInfo reason", b, resp.StatusCode)
					}
					if diff := cmp.Diff(before, snapshot(t, e)); diff != "" {
						t.Errorf("%s\nthe refusal (%d) changed the store (-before +after):\n%s", tc.reason, resp.StatusCode, diff)
					}
				}
				if c.email == stranger && tc.same != "" {
					if outsider[tc.same] == nil {
						outsider[tc.same] = map[string]string{}
					}
					// The namespace asked about is named in the answer;
					// nothing else may differ.
					outsider[tc.same][tc.name] = strings.ReplaceAll(string(b), "ghost", "team-a")
				}
				lines := e.lines(httpapi.AuditMessage)
				if !audited[key] {
					if len(lines) != 0 {
						t.Errorf("%s is no change, but logged %d audit lines", key, len(lines))
					}
					return
				}
				want := []map[string]any{{"who": c.email, "action": action[key], "resource": resourceOf(tc.path, tc.body, c.email != ""), "outcome": float64(resp.StatusCode)}}
				if diff := cmp.Diff(want, pick(lines, "who", "action", "resource", "outcome")); diff != "" {
					t.Errorf("audit lines of %s as %s (-want +got):\n%s", key, c.name, diff)
				}
			})
		}
	}
	for key := range audited {
		if !covered[key] {
			t.Errorf("route %s has no row in the role table", key)
		}
	}
	// An outsider's answers in a group are one body.
	for group, bodies := range outsider {
		var distinct []string
		for _, b := range bodies {
			if !slices.Contains(distinct, b) {
				distinct = append(distinct, b)
			}
		}
		if len(distinct) != 1 {
			t.Errorf("an outsider's %s answers differ with what exists (%d bodies): %v", group, len(distinct), bodies)
		}
		if !strings.Contains(distinct[0], `"PERMISSION_DENIED"`) {
			t.Errorf("an outsider's %s answer is not PERMISSION_DENIED: %s", group, distinct[0])
		}
	}
}

// resourceOf is the resource name a request acts on: its path's, and for
// a create the proxy its body names, when that is a name and the body was
// read (a request with no identity is refused before).
func resourceOf(path, body string, read bool) string {
	res, _, _ := strings.Cut(strings.TrimPrefix(path, "/v1/"), ":")
	var b struct{ Name string }
	if read && json.Unmarshal([]byte(body), &b) == nil && strings.HasSuffix(res, "/proxies") && proxy.IsLabel(b.Name) {
		res += "/" + b.Name
	}
	return res
}

// pick keeps some fields of each line.
func pick(lines []map[string]any, fields ...string) []map[string]any {
	var out []map[string]any
	for _, l := range lines {
		m := map[string]any{}
		for _, f := range fields {
			m[f] = l[f]
		}
		out = append(out, m)
	}
	return out
}

// TestEveryChangeIsAudited: a route audits exactly when it may change
// something, which is every method but GET, so a new route that writes
// cannot go without its audit line (the package doc and the API reference
// say every change is audited).
func TestEveryChangeIsAudited(t *testing.T) {
	for _, r := range httpapi.Routes() {
		if want := r.Method != "GET"; r.Audited != want {
			t.Errorf("%s %s: Audited %v, want %v: every call that may change something, and no other, writes an audit line", r.Method, r.Path, r.Audited, want)
		}
	}
}
