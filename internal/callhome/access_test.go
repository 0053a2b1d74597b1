package callhome

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/internal/vm/vmconfig"
)

// TestCheckLine: a VM's line passes with its text fields within maxField
// bytes, the session and the source address among them, and a time and a
// protocol; otherwise it is dropped.
func TestCheckLine(t *testing.T) {
	long := strings.Repeat("x", maxField+1)
	ok := vmconfig.AccessLine{Time: time.Unix(1, 0), Protocol: vmconfig.ProtocolConnect, User: "u", Session: "s1", SourceAddress: "[2001:db8::5]:40112"}
	cases := map[string]struct {
		line vmconfig.AccessLine
		want bool
	}{
		"whole":                {ok, true},
		"no time":              {func() vmconfig.AccessLine { l := ok; l.Time = time.Time{}; return l }(), false},
		"long user":            {func() vmconfig.AccessLine { l := ok; l.User = long; return l }(), false},
		"long session":         {func() vmconfig.AccessLine { l := ok; l.Session = long; return l }(), false},
		"long source address":  {func() vmconfig.AccessLine { l := ok; l.SourceAddress = long; return l }(), false},
		"session at the bound": {func() vmconfig.AccessLine { l := ok; l.Session = long[1:]; return l }(), true},
	}
	got, want := map[string]bool{}, map[string]bool{}
	for name, tc := range cases {
		got[name], want[name] = CheckLine(tc.line) == nil, tc.want
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("CheckLine passes (-want +got):\n%s", diff)
	}
}
