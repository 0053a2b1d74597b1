package proxy_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/internal/proxy"
)

func TestParseKey(t *testing.T) {
	cases := map[string]struct {
		reason  string
		path    string
		want    proxy.Key
		wantErr bool
	}{
		"Bare":       {reason: "the API's resource name", path: "namespaces/team-a/proxies/p1", want: proxy.Key{Namespace: "team-a", Name: "p1"}},
		"Subject":    {reason: "Eventarc's ce-subject", path: "documents/namespaces/team-a/proxies/p1", want: proxy.Key{Namespace: "team-a", Name: "p1"}},
		"FullName":   {reason: "DocumentEventData's value.name", path: "projects/demo/databases/(default)/documents/namespaces/team-a/proxies/p1", want: proxy.Key{Namespace: "team-a", Name: "p1"}},
		"Member":     {reason: "a warm pool's member", path: "pools/ci/proxies/w-1", want: proxy.Key{Pool: "ci", Name: "w-1"}},
		"MemberFull": {reason: "a member's DocumentEventData name", path: "projects/demo/databases/(default)/documents/pools/ci/proxies/w-1", want: proxy.Key{Pool: "ci", Name: "w-1"}},
		"PoolItself": {reason: "a pool's own document is no proxy", path: "pools/ci", wantErr: true},
		"Deeper":     {reason: "a subcollection below a proxy is not a proxy", path: "namespaces/a/proxies/b/events/c", wantErr: true},
		"OtherColl":  {reason: "another collection", path: "namespaces/a/things/b", wantErr: true},
		"BadLabel":   {reason: "names must be labels", path: "namespaces/A/proxies/b", wantErr: true},
		"Empty":      {reason: "nothing", path: "", wantErr: true},
		"TrailSlash": {reason: "an empty name", path: "namespaces/a/proxies/", wantErr: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := proxy.ParseKey(tc.path)
			if (err != nil) != tc.wantErr {
				t.Fatalf("%s\nParseKey(%q) error = %v, wantErr %v", tc.reason, tc.path, err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nParseKey(%q) (-want +got):\n%s", tc.reason, tc.path, diff)
			}
			if err == nil && !strings.HasSuffix(tc.path, got.Path()) {
				t.Errorf("Path() = %q, not the path parsed", got.Path())
			}
		})
	}
}

func TestIsLabel(t *testing.T) {
	cases := map[string]bool{
		"a": true, "team-a": true, "0abc": true, "a1-b2": true,
		"": false, "-a": false, "a-": false, "A": false, "a_b": false, "a.b": false,
		"abcdefghijabcdefghijabcdefghijabcdefghijabcdefghijabcdefghijabc":  true,
		"abcdefghijabcdefghijabcdefghijabcdefghijabcdefghijabcdefghijabcd": false,
	}
	for s, want := range cases {
		if got := proxy.IsLabel(s); got != want {
			t.Errorf("IsLabel(%q) = %v, want %v", s, got, want)
		}
	}
}

func TestSettled(t *testing.T) {
	settled := map[proxy.Phase]bool{
		proxy.PhasePending: false, proxy.PhaseCreating: false, proxy.PhaseProvisioning: false,
		proxy.PhaseReady: true, proxy.PhaseReplacing: false, proxy.PhaseDeleting: false, proxy.PhaseFailed: true,
	}
	for p, want := range settled {
		if got := p.Settled(); got != want {
			t.Errorf("%s.Settled() = %v, want %v", p, got, want)
		}
	}
}
