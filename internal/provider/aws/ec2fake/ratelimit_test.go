package ec2fake

import (
	"encoding/xml"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestRequestThrottling: each region's buckets count down by the
// category of the action (and RunInstances's by the instances it asks
// for), a request short of tokens is refused with EC2's 503
// RequestLimitExceeded and spends nothing, and the bucket's refill lets
// the next one pass.
func TestRequestThrottling(t *testing.T) {
	const describe, allocate = "DescribeAddresses", "AllocateAddress"
	type answer struct {
		Status int
		Code   string
	}
	ok := answer{Status: 200}
	refused := answer{503, "RequestLimitExceeded"}
	cases := map[string]struct {
		reason  string
		limits  *RateLimits
		steps   []string // "ACTION [REGION] [k=v&…]", or "+DURATION" to advance the clock
		want    []answer
		tokens  map[string]int // us-east-1's, at the end
		refused int
	}{
		"Off": {
			reason: "a new fake does not throttle",
			steps:  []string{describe, describe, describe},
			want:   []answer{ok, ok, ok}, tokens: map[string]int{},
		},
		"NonMutatingSpent": {
			reason: "a bucket of two takes two Describes, and the third is refused",
			limits: &RateLimits{NonMutating: Bucket{2, 1}},
			steps:  []string{describe, describe, describe},
			want:   []answer{ok, ok, refused}, tokens: map[string]int{"non-mutating": 0}, refused: 1,
		},
		"Refill": {
			reason: "at two a second, a token is back half a second after the bucket ran out, not before",
			limits: &RateLimits{NonMutating: Bucket{1, 2}},
			steps:  []string{describe, describe, "+499ms", describe, "+1ms", describe},
			want:   []answer{ok, refused, refused, ok}, tokens: map[string]int{"non-mutating": 0}, refused: 2,
		},
		"CategoriesAndRegionsApart": {
			reason: "a mutating action spends its own bucket, and another region has its own",
			limits: &RateLimits{Mutating: Bucket{1, 5}, NonMutating: Bucket{1, 20}},
			steps:  []string{allocate, allocate, allocate + " eu-west-1", describe},
			want:   []answer{ok, refused, ok, ok}, tokens: map[string]int{"mutating": 0, "non-mutating": 0}, refused: 1,
		},
		"RunInstancesResource": {
			reason: "RunInstances spends a resource token per instance: three do not fit in two, one does",
			limits: &RateLimits{Mutating: Bucket{200, 5}, RunInstances: Bucket{2, 2}},
			steps:  []string{"RunInstances us-east-1 MaxCount=3&MinCount=3", "RunInstances us-east-1 MaxCount=1&MinCount=1"},
			// The one that passes the throttle names no image: EC2's 400.
			want:   []answer{refused, {400, "MissingParameter"}},
			tokens: map[string]int{"mutating": 199, "RunInstances": 1}, refused: 1,
		},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			f := New()
			t.Cleanup(f.Close)
			now := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
			f.SetClock(func() time.Time { return now })
			if c.limits != nil {
				f.SetRateLimits(*c.limits)
			}
			var got []answer
			for _, step := range c.steps {
				if d, ok := strings.CutPrefix(step, "+"); ok {
					dur, err := time.ParseDuration(d)
					if err != nil {
						t.Fatal(err)
					}
					now = now.Add(dur)
					continue
				}
				status, code := call(t, f, step)
				got = append(got, answer{status, code})
			}
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Errorf("%s (-want +got):\n%s", c.reason, diff)
			}
			if diff := cmp.Diff(c.tokens, f.RateLimitTokens("us-east-1")); diff != "" {
				t.Errorf("%s: us-east-1's tokens (-want +got):\n%s", c.reason, diff)
			}
			if got := f.Throttled(); got != c.refused {
				t.Errorf("%s: %d refused, want %d", c.reason, got, c.refused)
			}
		})
	}
}

// TestRateLimitRemaining: SetRateLimitRemaining lets n requests pass
// whatever their buckets and refuses the next, until a token is back.
func TestRateLimitRemaining(t *testing.T) {
	f := New()
	t.Cleanup(f.Close)
	now := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	f.SetClock(func() time.Time { return now })
	f.SetRateLimits(EC2RateLimits)
	f.SetRateLimitRemaining(2)
	var got []int
	for _, step := range []string{"AllocateAddress", "DescribeAddresses", "AllocateAddress", "AllocateAddress"} {
		status, _ := call(t, f, step)
		got = append(got, status)
	}
	now = now.Add(time.Second / 5) // a mutating token back at 5 a second
	status, _ := call(t, f, "AllocateAddress")
	got = append(got, status)
	if diff := cmp.Diff([]int{200, 200, 503, 503, 200}, got); diff != "" {
		t.Errorf("statuses (-want +got):\n%s", diff)
	}
}

// call sends "ACTION [REGION] [QUERY]" signed for REGION (us-east-1
// when absent) and returns the status and, for an error, its Code as
// EC2's XML error body carries it.
func call(t *testing.T, f *Server, step string) (int, string) {
	t.Helper()
	fields := strings.Fields(step)
	region, extra := "us-east-1", ""
	if len(fields) > 1 {
		region = fields[1]
	}
	if len(fields) > 2 {
		extra = "&" + fields[2]
	}
	form, err := url.ParseQuery("Action=" + fields[0] + "&Version=2016-11-15" + extra)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodPost, f.Endpoint(), strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential=EGRESS-FAKE-TEST-KEY/20261207/"+region+"/ec2/aws4_request, SignedHeaders=host, Signature=0")
	resp, err := f.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode == http.StatusOK {
		return resp.StatusCode, ""
	}
	var e struct {
		Code      []string `xml:"Errors>Error>Code"`
		Message   []string `xml:"Errors>Error>Message"`
		RequestID string   `xml:"RequestID"`
	}
	if err := xml.Unmarshal(body, &e); err != nil || len(e.Code) != 1 || len(e.Message) != 1 || e.RequestID == "" {
		t.Fatalf("%s: the error body %q: %v", step, body, err)
	}
	return resp.StatusCode, e.Code[0]
}
