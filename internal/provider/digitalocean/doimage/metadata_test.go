package doimage

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/internal/provider/digitalocean/dovm"
	"github.com/egress-proxies/egress/internal/vm/imagetest"
)

// TestMetadata: the stand-in of DigitalOcean's metadata service serves
// /metadata/v1.json with every field cloud-init's DigitalOcean datasource
// reads, with the types it reads them as (droplet_id a number, the
// interfaces by type, dns.nameservers a list), and those the agent reads
// of a Static proxy's Droplet (the public interface's anchor_ipv4, the
// reserved IP, inactive until one is assigned, as dovm.ParseAnchorMetadata
// reads them), the user-data and vendor-data as given at their own
// paths, 404 elsewhere, and records every request. It needs no root and
// runs in make test.
func TestMetadata(t *testing.T) {
	var mu sync.Mutex
	reserved := ""
	m := &Metadata{DropletID: doDropletID, Hostname: "egress-3f2c1b0a", Region: doRegion, UserData: "#cloud-config\n{}",
		VendorData: doVendorData, Public: imagetest.VMPrefix, Gateway: imagetest.GatewayPrefix.Addr(), MAC: "04:01:2a:0f:2a:01",
		Nameservers: []string{imagetest.MetadataAddr.String()}, Anchor: doAnchor, AnchorGateway: doAnchorGateway.Addr(),
		ReservedIP: func() string { mu.Lock(); defer mu.Unlock(); return reserved }}
	srv := httptest.NewServer(m)
	defer srv.Close()
	get := func(path string) (int, string) {
		t.Helper()
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, string(b)
	}

	status, body := get("/metadata/v1.json")
	if status != http.StatusOK {
		t.Fatalf("GET /metadata/v1.json: %d", status)
	}
	// Decoded into plain values, as Python's json.loads gives the
	// datasource: what it reads, by key.
	var doc map[string]any
	if err := json.Unmarshal([]byte(body), &doc); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"droplet_id":  float64(doDropletID),
		"hostname":    "egress-3f2c1b0a",
		"user_data":   "#cloud-config\n{}",
		"vendor_data": doVendorData,
		"public_keys": []any{},
		"region":      doRegion,
		"interfaces": map[string]any{"public": []any{map[string]any{
			"ipv4":        map[string]any{"ip_address": "192.0.2.2", "netmask": "255.255.255.0", "gateway": "192.0.2.1"},
			"anchor_ipv4": map[string]any{"ip_address": "10.19.0.5", "netmask": "255.255.0.0", "gateway": "10.19.0.1"},
			"mac":         "04:01:2a:0f:2a:01", "type": "public",
		}}},
		"dns":         map[string]any{"nameservers": []any{"169.254.169.254"}},
		"reserved_ip": map[string]any{"ipv4": map[string]any{"active": false}},
	}
	if diff := cmp.Diff(want, doc); diff != "" {
		t.Errorf("/metadata/v1.json (-want +got):\n%s", diff)
	}
	// As the agent reads it: no reserved IP yet, then the one assigned.
	read := func() dovm.AnchorMetadata {
		t.Helper()
		_, body := get("/metadata/v1.json")
		am, err := dovm.ParseAnchorMetadata([]byte(body))
		if err != nil {
			t.Fatal(err)
		}
		return am
	}
	anchorOf := dovm.AnchorMetadata{Anchor: doAnchor, AnchorGateway: doAnchorGateway.Addr(), PublicGateway: imagetest.GatewayPrefix.Addr()}
	before := read()
	mu.Lock()
	reserved = "203.0.113.2"
	mu.Unlock()
	after := read()
	assigned := anchorOf
	assigned.Active, assigned.ReservedIP = true, netip.MustParseAddr("203.0.113.2")
	if diff := cmp.Diff([2]dovm.AnchorMetadata{anchorOf, assigned}, [2]dovm.AnchorMetadata{before, after}, netipComparers); diff != "" {
		t.Errorf("the document as the agent reads it, before and after the reserved IP is assigned (-want +got):\n%s", diff)
	}

	cases := map[string]struct {
		path       string
		wantStatus int
		wantBody   string
	}{
		"the user-data as given":            {"/metadata/v1/user-data", http.StatusOK, "#cloud-config\n{}"},
		"DigitalOcean's vendor-data":        {"/metadata/v1/vendor-data", http.StatusOK, doVendorData},
		"an endpoint the VM does not read":  {"/metadata/v1/tags/", http.StatusNotFound, "404 page not found\n"},
		"another cloud's metadata service":  {"/hetzner/v1/userdata", http.StatusNotFound, "404 page not found\n"},
		"the document under another prefix": {"/metadata/v2.json", http.StatusNotFound, "404 page not found\n"},
	}
	for name, tc := range cases {
		status, body := get(tc.path)
		if diff := cmp.Diff([2]any{tc.wantStatus, tc.wantBody}, [2]any{status, body}); diff != "" {
			t.Errorf("%s: GET %s (-want +got):\n%s", name, tc.path, diff)
		}
	}

	var uris []string
	for _, q := range m.Requests() {
		uris = append(uris, q.URI)
	}
	if len(uris) != 3+len(cases) || uris[0] != "/metadata/v1.json" || !strings.HasPrefix(m.Requests()[0].RemoteAddr, "127.0.0.1:") {
		t.Errorf("the stand-in recorded %v, want the document's three requests and the %d others", uris, len(cases))
	}
}
