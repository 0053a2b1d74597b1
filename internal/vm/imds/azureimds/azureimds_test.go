package azureimds_test

import (
	"context"
	"encoding/base64"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/internal/vm/imagetest"
	"github.com/egress-proxies/egress/internal/vm/imds/azureimds"
	"github.com/egress-proxies/egress/internal/vm/vmconfig"
)

// TestClient: the client reads the VM's identity and its userData,
// decoded, from the image test's stand-in of Azure's IMDS, and a
// userData changed from outside is read at the next request.
func TestClient(t *testing.T) {
	md := &imagetest.AzureMetadata{VMID: "8d1f3c2a-55e4-4f0b-9a7e-2b6c1d0e9f31", Name: "egress-vm", Location: "westeurope"}
	md.SetUserData(base64.StdEncoding.EncodeToString([]byte("#cloud-config\n{}\n")))
	srv := httptest.NewServer(md)
	t.Cleanup(srv.Close)
	c := &azureimds.Client{Base: srv.URL + "/metadata"}
	ctx := context.Background()
	id, err := c.Identity(ctx)
	if err != nil {
		t.Fatal(err)
	}
	first, err := c.UserData(ctx)
	if err != nil {
		t.Fatal(err)
	}
	md.SetUserData(base64.StdEncoding.EncodeToString([]byte("#cloud-config\n{\"write_files\": []}\n")))
	second, err := c.UserData(ctx)
	if err != nil {
		t.Fatal(err)
	}
	type read struct {
		ID            azureimds.Identity
		Zone          string
		First, Second string
	}
	want := read{azureimds.Identity{VMID: "8d1f3c2a-55e4-4f0b-9a7e-2b6c1d0e9f31", Name: "egress-vm", Location: "westeurope"}, "westeurope",
		"#cloud-config\n{}\n", "#cloud-config\n{\"write_files\": []}\n"}
	if diff := cmp.Diff(want, read{id, id.PlacementZone(), first, second}); diff != "" {
		t.Errorf("read (-want +got):\n%s", diff)
	}
}

// TestStandInRefusesAsAzure: the stand-in answers as Microsoft documents
// IMDS: 400 without "Metadata: true", with a forwarding header, without
// an api-version or with one it does not know, and for a leaf asked as
// JSON; 405 for a method but GET; 404 for a path it does not serve. The
// watched URL (vmconfig.AzureUserDataURL's path and query) answers.
func TestStandInRefusesAsAzure(t *testing.T) {
	md := &imagetest.AzureMetadata{VMID: "8d1f3c2a-55e4-4f0b-9a7e-2b6c1d0e9f31"}
	md.SetUserData("e30=")
	srv := httptest.NewServer(md)
	t.Cleanup(srv.Close)
	userData := vmconfig.AzureUserDataURL[len("http://169.254.169.254"):]
	cases := []struct {
		name, method, path string
		header             map[string]string
		want               int
	}{
		{"the watched URL", "GET", userData, map[string]string{"Metadata": "true"}, 200},
		{"the instance document", "GET", "/metadata/instance?api-version=2021-08-01&extended=true", map[string]string{"Metadata": "true"}, 200},
		{"no Metadata header", "GET", userData, nil, 400},
		{"Metadata: false", "GET", userData, map[string]string{"Metadata": "false"}, 400},
		{"X-Forwarded-For", "GET", userData, map[string]string{"Metadata": "true", "X-Forwarded-For": "198.51.100.10"}, 400},
		{"Forwarded", "GET", userData, map[string]string{"Metadata": "true", "Forwarded": "for=198.51.100.10"}, 400},
		{"no api-version", "GET", "/metadata/instance", map[string]string{"Metadata": "true"}, 400},
		{"an unknown api-version", "GET", "/metadata/instance?api-version=2099-01-01", map[string]string{"Metadata": "true"}, 400},
		{"a leaf as JSON", "GET", "/metadata/instance/compute/userData?api-version=2021-01-01", map[string]string{"Metadata": "true"}, 400},
		{"userData before 2021-01-01", "GET", "/metadata/instance/compute/userData?api-version=2020-09-01&format=text", map[string]string{"Metadata": "true"}, 404},
		{"PUT", "PUT", userData, map[string]string{"Metadata": "true"}, 405},
		{"no such path", "GET", "/metadata/identity/oauth2/token?api-version=2018-02-01", map[string]string{"Metadata": "true"}, 404},
	}
	got, want := map[string]int{}, map[string]int{}
	for _, tc := range cases {
		req, _ := http.NewRequest(tc.method, srv.URL+tc.path, nil)
		for k, v := range tc.header {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		got[tc.name], want[tc.name] = resp.StatusCode, tc.want
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("statuses (-want +got):\n%s", diff)
	}
	// The client's error names the status and the service's reason.
	_, err := (&azureimds.Client{Base: srv.URL + "/metadata"}).GetURL(context.Background(), srv.URL+"/metadata/instance")
	var e *azureimds.Error
	if !errors.As(err, &e) || e.Status != 400 || e.Message == "" {
		t.Errorf("a request without api-version: %v; want an *Error of 400 with the service's reason", err)
	}
}
