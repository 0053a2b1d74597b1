package imds_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/internal/vm/imds"
	"github.com/egress-proxies/egress/internal/vm/imds/imdsmock"
)

// The instance AWS's metadata mock plays in these tests.
var instance = imdsmock.Config{InstanceID: "i-0abc1234def567890", Zone: "eu-west-1b", Region: "eu-west-1", UserData: []byte("#cloud-config\n"),
	MAC: "02:4f:1a:2b:3c:4d", IPv6Prefixes: []string{"2a05:d018:8f:d200:5d3e::/80", "2a05:d018:8f:d200:8c1a::/80"}}

// mock runs AWS's amazon-ec2-metadata-mock in this process, IMDSv2 only.
func mock(t *testing.T) string {
	t.Helper()
	base, err := imdsmock.Start(context.Background(), t.TempDir(), instance)
	if err != nil {
		t.Fatal(err)
	}
	return base
}

// TestIdentityFromAWSMetadataMock: against AWS's own mock of IMDS, IMDSv2
// only, the client gets a token and reads the instance's id, zone and
// region with it.
func TestIdentityFromAWSMetadataMock(t *testing.T) {
	c := &imds.Client{Base: mock(t)}
	got, err := c.Identity(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := imds.Identity{InstanceID: instance.InstanceID, Zone: instance.Zone, Region: instance.Region}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Identity (-want +got):\n%s", diff)
	}
	// The identity document, where cloud-init reads the instance id on
	// AWS, names the same instance.
	token, err := c.Token(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodGet, c.Base+"/latest/dynamic/instance-identity/document", nil)
	req.Header.Set(imds.TokenHeader, token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var doc struct{ InstanceID, AvailabilityZone, Region string }
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(imds.Identity{InstanceID: instance.InstanceID, Zone: instance.Zone, Region: instance.Region},
		imds.Identity{InstanceID: doc.InstanceID, Zone: doc.AvailabilityZone, Region: doc.Region}); diff != "" {
		t.Errorf("the instance identity document (-want +got):\n%s", diff)
	}
}

// TestIMDSv2Required: the mock, as the aws provider's instances are
// launched (HttpTokens=required), refuses a read without a token or with
// one it did not issue, and a token asked for without a lifetime; the
// client names the path and the status.
func TestIMDSv2Required(t *testing.T) {
	base := mock(t)
	ctx := context.Background()
	get := func(header map[string]string) int {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/latest/meta-data/instance-id", nil)
		for k, v := range header {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	token, err := (&imds.Client{Base: base, TTL: time.Minute}).Token(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		reason string
		header map[string]string
		want   int
	}{
		"NoToken":      {reason: "IMDSv1's plain GET", want: http.StatusUnauthorized},
		"ForeignToken": {reason: "a token the service did not issue", header: map[string]string{imds.TokenHeader: "bm90IGEgdG9rZW4gb2YgdGhpcyBzZXJ2aWNlCg=="}, want: http.StatusUnauthorized},
		"Token":        {reason: "the session's token", header: map[string]string{imds.TokenHeader: token}, want: http.StatusOK},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := get(tc.header); got != tc.want {
				t.Errorf("%s: GET instance-id answered %d, want %d", tc.reason, got, tc.want)
			}
		})
	}

	_, err = (&imds.Client{Base: base}).MetaData(ctx, "bm90IGEgdG9rZW4gb2YgdGhpcyBzZXJ2aWNlCg==", imds.PathInstanceID)
	var e *imds.Error
	if !errors.As(err, &e) || e.Status != http.StatusUnauthorized || e.Path != "/latest/meta-data/instance-id" {
		t.Errorf("a read with a foreign token: %v, want an *imds.Error of 401 naming the path", err)
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodPut, base+"/latest/api/token", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("a token asked for without %s: %d, want 400", imds.TTLHeader, resp.StatusCode)
	}
}
