package imds_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/internal/vm/imds"
)

// TestIPv6PrefixFromAWSMetadataMock: against AWS's metadata mock, IMDSv2
// only, the client reads the primary interface's MAC and the first IPv6
// prefix delegated to it; the prefix's path, as every path, answers no
// read without a token, and nothing for an interface the instance has
// not.
func TestIPv6PrefixFromAWSMetadataMock(t *testing.T) {
	base := mock(t)
	ctx := context.Background()
	p, err := (&imds.Client{Base: base}).IPv6Prefix(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(instance.IPv6Prefixes[0], p.String()); diff != "" {
		t.Errorf("IPv6Prefix (-want +got):\n%s", diff)
	}
	token, err := (&imds.Client{Base: base}).Token(ctx)
	if err != nil {
		t.Fatal(err)
	}
	path := func(mac string) string { return "/latest/meta-data/" + fmt.Sprintf(imds.PathIPv6PrefixOf, mac) }
	cases := map[string]struct {
		reason      string
		path, token string
		want        int
	}{
		"Token":    {reason: "the session's token, the instance's MAC", path: path(instance.MAC), token: token, want: http.StatusOK},
		"NoToken":  {reason: "IMDSv1's plain GET", path: path(instance.MAC), want: http.StatusUnauthorized},
		"OtherMAC": {reason: "an interface the instance has not", path: path("02:00:00:00:00:01"), token: token, want: http.StatusNotFound},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+tc.path, nil)
			if tc.token != "" {
				req.Header.Set(imds.TokenHeader, tc.token)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tc.want {
				t.Errorf("%s: GET %s answered %d, want %d", tc.reason, tc.path, resp.StatusCode, tc.want)
			}
		})
	}
}

// TestFirstIPv6Prefix: the first line of an ipv6-prefix answer, an IPv6
// prefix in its canonical form; an empty answer is no prefix, and
// anything else is refused with what it was.
func TestFirstIPv6Prefix(t *testing.T) {
	cases := map[string]struct {
		text, want string
		noPrefix   bool // ErrNoIPv6Prefix
		err        bool
	}{
		"One":        {text: "2a05:d018:8f:d200:5d3e::/80", want: "2a05:d018:8f:d200:5d3e::/80"},
		"TwoLines":   {text: "2a05:d018:8f:d200:5d3e::/80\n2a05:d018:8f:d200:8c1a::/80\n", want: "2a05:d018:8f:d200:5d3e::/80"},
		"Empty":      {text: "\n", noPrefix: true, err: true},
		"IPv4":       {text: "10.0.7.16/28", err: true},
		"Unmasked":   {text: "2a05:d018:8f:d200:5d3e::1/80", err: true},
		"NotAPrefix": {text: "<html>not found</html>", err: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p, err := imds.FirstIPv6Prefix(tc.text)
			if (err != nil) != tc.err || errors.Is(err, imds.ErrNoIPv6Prefix) != tc.noPrefix {
				t.Fatalf("FirstIPv6Prefix(%q): %v, want an error %t (no prefix %t)", tc.text, err, tc.err, tc.noPrefix)
			}
			if err == nil && p.String() != tc.want {
				t.Errorf("FirstIPv6Prefix(%q) = %s, want %s", tc.text, p, tc.want)
			}
		})
	}
}
