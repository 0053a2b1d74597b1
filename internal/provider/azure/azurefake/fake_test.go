package azurefake_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/internal/provider/azure/azurefake"
)

var tags = map[string]string{"proxy-operator-managed": "true", "egress-deployment": "egress"}

// errorOf is an answer's ARM error: status and code, "" when the body has
// no {"error": {"code", "message"}}.
func errorOf(r reply) [2]string {
	e, _ := r.body["error"].(map[string]any)
	code, _ := e["code"].(string)
	if msg, _ := e["message"].(string); code != "" && msg == "" {
		code += " (without a message)"
	}
	return [2]string{http.StatusText(r.status), code}
}

// TestErrors: each refusal answers ARM's status and error code in ARM's
// shape.
func TestErrors(t *testing.T) {
	f, subnets := newFake(t)
	c := newARMClient(t, f)
	c.create(proxy{name: "p1", location: "westeurope", tags: tags}, subnets["westeurope"])
	nic, _ := f.NIC(testGroup, "p1-nic")
	noToken := *c
	noToken.token = "forged"

	cases := map[string]struct {
		reason string
		do     func() reply
		want   [2]string
	}{
		"a VM that is not there": {
			reason: "404 ResourceNotFound",
			do:     func() reply { return c.do(http.MethodGet, groupPath("Microsoft.Compute/virtualMachines", "gone"), nil) },
			want:   [2]string{"Not Found", "ResourceNotFound"},
		},
		"a resource group that is not there": {
			reason: "404 ResourceGroupNotFound",
			do: func() reply {
				return c.do(http.MethodGet, "/subscriptions/"+testSubscription+"/resourceGroups/nope/providers/Microsoft.Compute/virtualMachines", nil)
			},
			want: [2]string{"Not Found", "ResourceGroupNotFound"},
		},
		"another subscription": {
			reason: "404 SubscriptionNotFound",
			do: func() reply {
				return c.do(http.MethodGet, "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/"+testGroup+"/providers/Microsoft.Compute/virtualMachines", nil)
			},
			want: [2]string{"Not Found", "SubscriptionNotFound"},
		},
		"a token the fake never handed out": {
			reason: "401 InvalidAuthenticationToken",
			do: func() reply {
				return noToken.do(http.MethodGet, groupPath("Microsoft.Compute/virtualMachines", "p1"), nil)
			},
			want: [2]string{"Unauthorized", "InvalidAuthenticationToken"},
		},
		"no api-version": {
			reason: "ARM requires one",
			do: func() reply {
				return c.do(http.MethodGet, groupPath("Microsoft.Compute/virtualMachines", "p1")+"?api-version=", nil)
			},
			want: [2]string{"Bad Request", "MissingApiVersionParameter"},
		},
		"a second create of a VM by its name": {
			reason: "If-None-Match: * on a VM that exists: 412",
			do: func() reply {
				return c.do(http.MethodPut, groupPath("Microsoft.Compute/virtualMachines", "p1"), vmBody(proxy{name: "p1", location: "westeurope"}, nic.ID, "Delete", "Delete"), "If-None-Match", "*")
			},
			want: [2]string{"Precondition Failed", "PreconditionFailed"},
		},
		"a NIC a VM holds": {
			reason: "deleting it: 400 NicInUse",
			do: func() reply {
				return c.do(http.MethodDelete, groupPath("Microsoft.Network/networkInterfaces", "p1-nic"), nil)
			},
			want: [2]string{"Bad Request", "NicInUse"},
		},
		"a public IP a NIC holds": {
			reason: "deleting it: 400 PublicIPAddressCannotBeDeleted",
			do: func() reply {
				return c.do(http.MethodDelete, groupPath("Microsoft.Network/publicIPAddresses", "p1-ip"), nil)
			},
			want: [2]string{"Bad Request", "PublicIPAddressCannotBeDeleted"},
		},
		"a disk a VM holds": {
			reason: "deleting it: 409 OperationNotAllowed",
			do: func() reply {
				vm, _ := f.VM(testGroup, "p1")
				return c.do(http.MethodDelete, groupPath("Microsoft.Compute/disks", vm.OSDisk), nil)
			},
			want: [2]string{"Conflict", "OperationNotAllowed"},
		},
		"a Basic SKU public IP": {
			reason: "retired: refused",
			do: func() reply {
				return c.do(http.MethodPut, groupPath("Microsoft.Network/publicIPAddresses", "basic"), map[string]any{"location": "westeurope", "sku": map[string]any{"name": "Basic"}})
			},
			want: [2]string{"Bad Request", "BasicSkuPublicIpNotAllowed"},
		},
		"a NIC on a subnet of another location": {
			reason: "400 InvalidResourceReference",
			do: func() reply {
				return c.do(http.MethodPut, groupPath("Microsoft.Network/networkInterfaces", "n2"), map[string]any{"location": "westeurope",
					"properties": map[string]any{"ipConfigurations": []any{map[string]any{"name": "ipconfig1", "properties": map[string]any{"subnet": map[string]any{"id": subnets["northeurope"]}}}}}})
			},
			want: [2]string{"Bad Request", "InvalidResourceReference"},
		},
		"a route the fake does not serve": {
			reason: "404 in ARM's shape",
			do: func() reply {
				return c.do(http.MethodGet, "/subscriptions/"+testSubscription+"/resourceGroups/"+testGroup+"/providers/Microsoft.Storage/storageAccounts", nil)
			},
			want: [2]string{"Not Found", "NoRegisteredProviderFound"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, errorOf(tc.do())); diff != "" {
				t.Errorf("%s (-want +got):\n%s", tc.reason, diff)
			}
		})
	}
	if diff := cmp.Diff(azurefake.Inventory{"virtualMachines": {"p1"}, "networkInterfaces": {"p1-nic"}, "publicIPAddresses": {"p1-ip"}, "disks": {mustVM(t, f, "p1").OSDisk}}, f.Inventory(testGroup)); diff != "" {
		t.Errorf("after the refusals (-want +got):\n%s", diff)
	}
}

func mustVM(t *testing.T, f *azurefake.Server, name string) azurefake.VM {
	t.Helper()
	vm, ok := f.VM(testGroup, name)
	if !ok {
		t.Fatalf("no VM %s", name)
	}
	return vm
}

// TestDeleteOptions: a VM's delete takes along what its deleteOptions
// say, and leaves free what says Detach.
func TestDeleteOptions(t *testing.T) {
	cases := map[string]struct {
		reason                string
		static                bool   // the public IP's deleteOption Detach
		nicOption, diskOption string // the VM's
		want                  azurefake.Inventory
		wantIPFree            bool
	}{
		"an Ephemeral proxy": {
			reason: "NIC, public IP and disk all Delete: nothing left", nicOption: "Delete", diskOption: "Delete",
			want: azurefake.Inventory{},
		},
		"a Static proxy": {
			reason: "the public IP Detach: it stays, free", static: true, nicOption: "Delete", diskOption: "Delete",
			want: azurefake.Inventory{"publicIPAddresses": {"p-ip"}}, wantIPFree: true,
		},
		"a NIC to keep": {
			reason: "the NIC Detach: it stays with its public IP on it", nicOption: "Detach", diskOption: "Delete",
			want: azurefake.Inventory{"networkInterfaces": {"p-nic"}, "publicIPAddresses": {"p-ip"}},
		},
		"a disk to keep": {
			reason: "the OS disk Detach: it stays, unattached", nicOption: "Delete", diskOption: "Detach",
			want: azurefake.Inventory{"disks": {"p-osdisk"}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f, subnets := newFake(t)
			c := newARMClient(t, f)
			c.createWith(proxy{name: "p", location: "westeurope", static: tc.static, tags: tags}, subnets["westeurope"], tc.nicOption, tc.diskOption)
			if st := c.wait(c.do(http.MethodDelete, groupPath("Microsoft.Compute/virtualMachines", "p"), nil)); st["status"] != "Succeeded" {
				t.Fatalf("the delete's operation: %v", st)
			}
			if diff := cmp.Diff(tc.want, f.Inventory(testGroup)); diff != "" {
				t.Errorf("%s (-want +got):\n%s", tc.reason, diff)
			}
			if ip, ok := f.PublicIP(testGroup, "p-ip"); ok && tc.wantIPFree != (ip.IPConfiguration == "") {
				t.Errorf("%s: the public IP is held by %q", tc.reason, ip.IPConfiguration)
			}
		})
	}
}

// TestLongRunningOperations: a create, an update and a delete answer at
// once with the resource in a transient state and an operation; the
// operation's status and its Location result say InProgress (202) until
// it finishes, then Succeeded and the resource (or 204 for a delete).
func TestLongRunningOperations(t *testing.T) {
	f, subnets := newFake(t)
	c := newARMClient(t, f)
	c.create(proxy{name: "p", location: "westeurope", tags: tags}, subnets["westeurope"])
	vmPath := groupPath("Microsoft.Compute/virtualMachines", "p")
	state := func() string {
		r := c.do(http.MethodGet, vmPath, nil)
		if r.status == http.StatusNotFound {
			return "gone"
		}
		s, _ := r.body["properties"].(map[string]any)["provisioningState"].(string)
		return s
	}
	opStatus := func(r reply) string {
		st := c.do(http.MethodGet, r.header.Get("Azure-AsyncOperation"), nil)
		s, _ := st.body["status"].(string)
		return s
	}
	location := func(r reply) int { return c.do(http.MethodGet, r.header.Get("Location"), nil).status }

	// Held: nothing finishes until Settle, however often it is polled
	// (a client that stops here resumes from its ResumeToken).
	f.SetPollsToFinish(0)
	var got []string
	patch := c.do(http.MethodPatch, vmPath, map[string]any{"properties": map[string]any{"userData": "bmV3"}})
	got = append(got, http.StatusText(patch.status), state(), opStatus(patch), opStatus(patch), http.StatusText(location(patch)))
	f.Settle()
	got = append(got, state(), opStatus(patch), http.StatusText(location(patch)))
	del := c.do(http.MethodDelete, vmPath, nil)
	got = append(got, http.StatusText(del.status), state(), opStatus(del), http.StatusText(location(del)))
	f.Settle()
	got = append(got, state(), opStatus(del), http.StatusText(location(del)))
	want := []string{
		"OK", "Updating", "InProgress", "InProgress", "Accepted",
		"Succeeded", "Succeeded", "OK",
		"Accepted", "Deleting", "InProgress", "Accepted",
		"gone", "Succeeded", "No Content",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("held operations: PATCH, Settle, DELETE, Settle (-want +got):\n%s", diff)
	}

	// Done at the third poll.
	f.SetPollsToFinish(3)
	c.create(proxy{name: "q", location: "westeurope", tags: tags}, subnets["westeurope"])
	put := c.do(http.MethodPatch, groupPath("Microsoft.Compute/virtualMachines", "q"), map[string]any{"tags": map[string]string{"a": "b"}})
	got = []string{opStatus(put), opStatus(put), opStatus(put), opStatus(put)}
	if diff := cmp.Diff([]string{"InProgress", "InProgress", "Succeeded", "Succeeded"}, got); diff != "" {
		t.Errorf("SetPollsToFinish(3): the status at each poll (-want +got):\n%s", diff)
	}
	if n := f.InProgress(); n != 0 {
		t.Errorf("%d operations in progress at the end, want 0", n)
	}

	// A delete of a VM still being created preempts the create: it ends
	// Canceled (OperationPreempted), and the delete's end leaves nothing,
	// no OS disk either.
	nicID := c.nicFor(proxy{name: "r", location: "westeurope", tags: tags}, subnets["westeurope"])
	f.SetPollsToFinish(0)
	create := c.do(http.MethodPut, groupPath("Microsoft.Compute/virtualMachines", "r"), vmBody(proxy{name: "r", location: "westeurope"}, nicID, "Delete", "Delete"), "If-None-Match", "*")
	del = c.do(http.MethodDelete, groupPath("Microsoft.Compute/virtualMachines", "r"), nil)
	f.Settle()
	st := c.do(http.MethodGet, create.header.Get("Azure-AsyncOperation"), nil)
	got = []string{http.StatusText(create.status), http.StatusText(del.status), st.body["status"].(string), st.body["error"].(map[string]any)["code"].(string), opStatus(del)}
	if diff := cmp.Diff([]string{"Created", "Accepted", "Canceled", "OperationPreempted", "Succeeded"}, got); diff != "" {
		t.Errorf("a create, then its delete: statuses (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(azurefake.Inventory{"publicIPAddresses": {"q-ip"}, "networkInterfaces": {"q-nic"}, "virtualMachines": {"q"}, "disks": {"q-osdisk"}}, f.Inventory(testGroup)); diff != "" {
		t.Errorf("after a preempted create and its delete, what is left is q's alone (-want +got):\n%s", diff)
	}
}

// TestUserData: a VM's userData comes back only with $expand=userData,
// a PATCH changes it in place (the same vmId), and customData never comes
// back.
func TestUserData(t *testing.T) {
	f, subnets := newFake(t)
	c := newARMClient(t, f)
	c.create(proxy{name: "p", location: "westeurope", tags: tags}, subnets["westeurope"])
	path := groupPath("Microsoft.Compute/virtualMachines", "p")
	read := func(expand string) []string {
		q := ""
		if expand != "" {
			q = "?$expand=" + expand
		}
		p := c.do(http.MethodGet, path+q, nil).body["properties"].(map[string]any)
		ud, _ := p["userData"].(string)
		_, cd := p["osProfile"].(map[string]any)["customData"]
		return []string{p["vmId"].(string), ud, map[bool]string{true: "customData shown", false: ""}[cd]}
	}
	before := read("")
	first := read("userData")
	c.wait(c.do(http.MethodPatch, path, map[string]any{"properties": map[string]any{"userData": "Z2VuZXJhdGlvbiAy"}}))
	after := read("userData")
	got := [][]string{before, first, after}
	id := before[0]
	want := [][]string{{id, "", ""}, {id, "I2Nsb3VkLWNvbmZpZwo=", ""}, {id, "Z2VuZXJhdGlvbiAy", ""}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("vmId, userData, customData: plain GET, $expand=userData, after a PATCH (-want +got):\n%s", diff)
	}
	vm := mustVM(t, f, "p")
	if vm.UserData != "Z2VuZXJhdGlvbiAy" || vm.CustomData != "I2Nsb3VkLWNvbmZpZwo=" {
		t.Errorf("the fake keeps userData %q, customData %q", vm.UserData, vm.CustomData)
	}
}

// TestListPages: a list answers pages with nextLink, which carries the
// query (and so the api-version) on, until the last.
func TestListPages(t *testing.T) {
	f, _ := newFake(t)
	c := newARMClient(t, f)
	f.SetPageSize(2)
	var want []string
	for _, n := range []string{"a", "b", "c", "d", "e"} {
		f.PutVM(testGroup, n, "westeurope", map[string]string{"team": "other"})
		want = append(want, n)
	}
	var got []string
	pages := 0
	next := groupPath("Microsoft.Compute/virtualMachines", "")
	next = strings.TrimSuffix(next, "/")
	for next != "" {
		r := c.do(http.MethodGet, next, nil)
		pages++
		for _, v := range r.body["value"].([]any) {
			got = append(got, v.(map[string]any)["name"].(string))
		}
		next, _ = r.body["nextLink"].(string)
		if next != "" && !strings.Contains(next, "api-version="+computeAPI) {
			t.Errorf("nextLink %s drops the api-version", next)
		}
	}
	if diff := cmp.Diff(want, got); diff != "" || pages != 3 {
		t.Errorf("5 VMs 2 a page: %d pages, names (-want +got):\n%s", pages, diff)
	}
}

// TestFaults: capacity refuses a create at once (SkuNotAvailable, quota)
// or through its operation (AllocationFailed: the VM stays, Failed), in
// the location and zone set up and for as many creates as set up;
// throttling answers 429 with Retry-After.
func TestFaults(t *testing.T) {
	type outcome struct {
		Status, Code, OpStatus, OpCode, State string
		RetryAfter                            string
	}
	cases := map[string]struct {
		reason         string
		location, zone string
		fault          azurefake.Fault
		want           []outcome // the first create, then the next
	}{
		"a size not available in a zone": {
			reason: "409 SkuNotAvailable at once, nothing made; the next create goes",
			zone:   "1", fault: azurefake.SkuNotAvailable(),
			want: []outcome{{Status: "Conflict", Code: "SkuNotAvailable", State: "gone"}, {Status: "Created", OpStatus: "Succeeded", State: "Succeeded"}},
		},
		"no capacity in the location": {
			reason:   "201, the operation Failed AllocationFailed, the VM stays Failed",
			location: "westeurope", fault: azurefake.AllocationFailed(),
			want: []outcome{{Status: "Created", OpStatus: "Failed", OpCode: "AllocationFailed", State: "Failed"}, {Status: "Created", OpStatus: "Succeeded", State: "Succeeded"}},
		},
		"no capacity in the zone": {
			reason: "ZonalAllocationFailed likewise",
			zone:   "1", fault: azurefake.ZonalAllocationFailed(),
			want: []outcome{{Status: "Created", OpStatus: "Failed", OpCode: "ZonalAllocationFailed", State: "Failed"}, {Status: "Created", OpStatus: "Succeeded", State: "Succeeded"}},
		},
		"another location's failure": {
			reason:   "a fault of northeurope leaves westeurope's creates alone",
			location: "northeurope", fault: azurefake.AllocationFailed(),
			want: []outcome{{Status: "Created", OpStatus: "Succeeded", State: "Succeeded"}, {Status: "Created", OpStatus: "Succeeded", State: "Succeeded"}},
		},
		"the cores quota": {
			reason: "409 OperationNotAllowed at once",
			fault:  azurefake.QuotaExceeded("standardBSFamily", 4, 4, 1),
			want:   []outcome{{Status: "Conflict", Code: "OperationNotAllowed", State: "gone"}, {Status: "Created", OpStatus: "Succeeded", State: "Succeeded"}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f, subnets := newFake(t)
			c := newARMClient(t, f)
			f.FailCreates(tc.location, tc.zone, 1, tc.fault)
			var got []outcome
			for _, vm := range []string{"p", "q"} {
				p := proxy{name: vm, location: "westeurope", zone: "1", tags: tags}
				nicID := c.nicFor(p, subnets["westeurope"])
				r := c.do(http.MethodPut, groupPath("Microsoft.Compute/virtualMachines", vm), vmBody(p, nicID, "Delete", "Delete"), "If-None-Match", "*")
				o := outcome{Status: http.StatusText(r.status), Code: errorOf(r)[1]}
				if op := r.header.Get("Azure-AsyncOperation"); op != "" {
					st := c.wait(r)
					o.OpStatus, _ = st["status"].(string)
					if e, ok := st["error"].(map[string]any); ok {
						o.OpCode, _ = e["code"].(string)
					}
				}
				o.State = "gone"
				if v, ok := f.VM(testGroup, vm); ok {
					o.State = v.ProvisioningState
				}
				got = append(got, o)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s (-want +got):\n%s", tc.reason, diff)
			}
		})
	}

	t.Run("throttled", func(t *testing.T) {
		f, _ := newFake(t)
		c := newARMClient(t, f)
		f.PutVM(testGroup, "p", "westeurope", tags)
		f.Fail("virtualMachines.get", 1, azurefake.Throttled(7))
		first := c.do(http.MethodGet, groupPath("Microsoft.Compute/virtualMachines", "p"), nil)
		second := c.do(http.MethodGet, groupPath("Microsoft.Compute/virtualMachines", "p"), nil)
		got := []string{http.StatusText(first.status), errorOf(first)[1], first.header.Get("Retry-After"), http.StatusText(second.status)}
		if diff := cmp.Diff([]string{"Too Many Requests", "TooManyRequests", "7", "OK"}, got); diff != "" {
			t.Errorf("a GET throttled once (-want +got):\n%s", diff)
		}
	})
}

// TestTokens: the token endpoint grants client_credentials to a client
// it knows, by its secret or by an assertion its federated credential
// trusts, and refuses the rest with Entra ID's OAuth error codes; only
// a token it granted opens ARM.
func TestTokens(t *testing.T) {
	f, _ := newFake(t)
	f.AddClientAssertion("federated-app", func(jwt string) error {
		if jwt != "google-id-token" {
			return errors.New("not the functions' account")
		}
		return nil
	})
	f.PutVM(testGroup, "p", "westeurope", tags)
	ask := func(form url.Values) (int, string, string) {
		form.Set("grant_type", "client_credentials")
		form.Set("scope", azurefake.ARMAudience+".default")
		resp, err := f.Client().PostForm(f.AuthorityHost()+testTenant+"/oauth2/v2.0/token", form)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var body struct{ AccessToken, Error string }
		var raw map[string]any
		json.NewDecoder(resp.Body).Decode(&raw)
		body.AccessToken, _ = raw["access_token"].(string)
		body.Error, _ = raw["error"].(string)
		return resp.StatusCode, body.Error, body.AccessToken
	}
	assertion := "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
	cases := map[string]struct {
		reason     string
		form       url.Values
		wantStatus int
		wantError  string
	}{
		"a secret": {
			reason: "granted", form: url.Values{"client_id": {testClient}, "client_secret": {testSecret}}, wantStatus: 200,
		},
		"a wrong secret": {
			reason: "invalid_client", form: url.Values{"client_id": {testClient}, "client_secret": {"guess"}}, wantStatus: 401, wantError: "invalid_client",
		},
		"an unknown client": {
			reason: "unauthorized_client", form: url.Values{"client_id": {"who"}, "client_secret": {"x"}}, wantStatus: 400, wantError: "unauthorized_client",
		},
		"a trusted assertion": {
			reason: "granted", form: url.Values{"client_id": {"federated-app"}, "client_assertion_type": {assertion}, "client_assertion": {"google-id-token"}}, wantStatus: 200,
		},
		"an assertion the federated credential does not trust": {
			reason: "invalid_client", form: url.Values{"client_id": {"federated-app"}, "client_assertion_type": {assertion}, "client_assertion": {"forged"}}, wantStatus: 401, wantError: "invalid_client",
		},
		"no proof": {
			reason: "invalid_client", form: url.Values{"client_id": {testClient}}, wantStatus: 401, wantError: "invalid_client",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			status, code, token := ask(tc.form)
			if diff := cmp.Diff([]any{tc.wantStatus, tc.wantError}, []any{status, code}); diff != "" {
				t.Fatalf("%s (-want +got):\n%s", tc.reason, diff)
			}
			if token == "" {
				return
			}
			c := &armClient{t: t, f: f, http: f.Client(), token: token}
			if r := c.do(http.MethodGet, groupPath("Microsoft.Compute/virtualMachines", "p"), nil); r.status != http.StatusOK {
				t.Errorf("ARM with the granted token: %d %v", r.status, r.body)
			}
		})
	}
	var methods []string
	for _, g := range f.Grants() {
		methods = append(methods, g.ClientID+" "+g.Method)
	}
	sort.Strings(methods)
	if diff := cmp.Diff([]string{testClient + " client_secret", "federated-app client_assertion"}, methods); diff != "" {
		t.Errorf("grants (-want +got):\n%s", diff)
	}

	// What MSAL reads before it asks: the tenant's OpenID configuration
	// (and ADFS's, for az), naming the fake's token endpoint.
	for _, path := range []string{testTenant + "/v2.0/.well-known/openid-configuration", "adfs/.well-known/openid-configuration"} {
		resp, err := f.Client().Get(f.AuthorityHost() + path)
		if err != nil {
			t.Fatal(err)
		}
		var cfg map[string]any
		json.NewDecoder(resp.Body).Decode(&cfg)
		resp.Body.Close()
		if want := f.AuthorityHost() + testTenant + "/oauth2/v2.0/token"; cfg["token_endpoint"] != want {
			t.Errorf("%s names token_endpoint %v, want %s", path, cfg["token_endpoint"], want)
		}
	}
}

// TestWithoutASocket: NewHandler's fake answers through HTTPClient
// in-process (the simulation's), and takes the fixed token AcceptToken
// names, as a client that asks no one for its tokens sends it; a
// long-running operation's URLs lead back to it.
func TestWithoutASocket(t *testing.T) {
	f := azurefake.NewHandler(testSubscription, testTenant)
	defer f.Close()
	f.SeedNetwork(testGroup, "westeurope")
	f.AcceptToken("egress-local-azure-token")
	f.PutVM(testGroup, "p", "westeurope", tags)
	c := &armClient{t: t, f: f, http: f.HTTPClient(), token: "egress-local-azure-token"}
	got := []string{http.StatusText(c.do(http.MethodGet, groupPath("Microsoft.Compute/virtualMachines", "p"), nil).status)}
	st := c.wait(c.do(http.MethodDelete, groupPath("Microsoft.Compute/virtualMachines", "p"), nil))
	got = append(got, st["status"].(string))
	c.token = "another"
	got = append(got, errorOf(c.do(http.MethodGet, groupPath("Microsoft.Compute/virtualMachines", "p"), nil))[1])
	if diff := cmp.Diff([]string{"OK", "Succeeded", "InvalidAuthenticationToken"}, got); diff != "" {
		t.Errorf("a GET, a DELETE followed to its end, a GET with a token not accepted (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(azurefake.Inventory{}, f.Inventory(testGroup)); diff != "" {
		t.Errorf("after the delete (-want +got):\n%s", diff)
	}
}

// TestRateLimits: with ARM's buckets set, a subscription's reads past
// the bucket answer 429 SubscriptionRequestsThrottled with Retry-After
// until tokens come back (by the fake's clock), writes spend their own
// bucket, and each answer says what is left.
func TestRateLimits(t *testing.T) {
	f, _ := newFake(t)
	c := newARMClient(t, f)
	f.PutVM(testGroup, "p", "westeurope", tags)
	now := time.Date(2026, 12, 7, 4, 0, 0, 0, time.UTC)
	f.SetClock(func() time.Time { return now })
	f.SetRateLimits(azurefake.RateLimits{Reads: azurefake.Bucket{Size: 3, Refill: 1}, Writes: azurefake.Bucket{Size: 1, Refill: 1}})
	vm := groupPath("Microsoft.Compute/virtualMachines", "p")
	read := func() string {
		r := c.do(http.MethodGet, vm, nil)
		return strings.Join([]string{http.StatusText(r.status), errorOf(r)[1], r.header.Get("Retry-After"), r.header.Get("x-ms-ratelimit-remaining-subscription-reads")}, " ")
	}
	var got []string
	for range 4 {
		got = append(got, read())
	}
	patch := c.do(http.MethodPatch, vm, map[string]any{"tags": tags})
	got = append(got, http.StatusText(patch.status)+" "+patch.header.Get("x-ms-ratelimit-remaining-subscription-writes"))
	now = now.Add(time.Second)
	got = append(got, read())
	want := []string{"OK   2", "OK   1", "OK   0", "Too Many Requests SubscriptionRequestsThrottled 1 0", "OK 0", "OK   0"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("four reads, a write, a read a second later (-want +got):\n%s", diff)
	}
}
