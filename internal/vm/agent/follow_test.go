package agent_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/internal/vm/agent"
	"github.com/egress-proxies/egress/internal/vm/vmconfig"
)

// part is a Follower of the test's, known by its name alone.
type part string

func (p part) Name() string { return string(p) }

func (p part) Follow(context.Context, string, agent.FollowEnv) error { return nil }

// TestFollowerOf: the setting egress-follow picks the part it names, with
// its URL, among those the binary links; a name none of them has, or a
// setting that names no part, is an error that names the setting and,
// for an unknown part, every part the agent knows.
func TestFollowerOf(t *testing.T) {
	known := []agent.Follower{part("second-cloud"), part("first-cloud")}
	cases := map[string]struct {
		reason   string
		setting  string
		wantName string
		wantURL  string
		wantErr  string
	}{
		"known": {
			reason:   "the part named, and the URL it reads",
			setting:  vmconfig.Follow("first-cloud", "http://169.254.169.254/metadata/v1.json"),
			wantName: "first-cloud", wantURL: "http://169.254.169.254/metadata/v1.json",
		},
		"unknown": {
			reason:  "a part of another build of the agent: the setting and the known parts are named",
			setting: vmconfig.Follow("third-cloud", "http://169.254.169.254/x"),
			wantErr: `agent: the setting egress-follow names "third-cloud", which is none of the VM-side parts this agent links (first-cloud, second-cloud)`,
		},
		"no name": {
			reason:  "a bare URL, as a boot of before the parts were named wrote it",
			setting: "http://169.254.169.254/metadata/v1.json",
			wantErr: `vmconfig: the setting egress-follow is "http://169.254.169.254/metadata/v1.json": want a part's name (lower-case letters, digits, '-') and its http(s) URL, one space between`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f, url, err := agent.FollowerOf(known, tc.setting)
			gotName, gotErr := "", ""
			if f != nil {
				gotName = f.Name()
			}
			if err != nil {
				gotErr = err.Error()
			}
			if diff := cmp.Diff([3]string{tc.wantName, tc.wantURL, tc.wantErr}, [3]string{gotName, url, gotErr}); diff != "" {
				t.Errorf("%s\nthe part, its URL and the error (-want +got):\n%s", tc.reason, diff)
			}
		})
	}
}
