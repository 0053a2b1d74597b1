package main

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/internal/clouds/cloudsvm"
	"github.com/egress-proxies/egress/internal/logging"
	"github.com/egress-proxies/egress/internal/vm/vmconfig"
)

// TestFollowMain: `egress-proxy agent -follow` without the setting has
// nothing to do (0); a setting that names no part this binary links, or
// names none at all, exits 2, which egress-follow.service does not
// restart, and its log names the setting and, for an unknown part, the
// parts the binary links.
func TestFollowMain(t *testing.T) {
	var known []string
	for _, f := range cloudsvm.Followers() {
		known = append(known, f.Name())
	}
	cases := map[string]struct {
		setting  *string
		wantCode int
		wantLog  []string
	}{
		"no setting":      {wantCode: 0, wantLog: []string{"no setting " + vmconfig.KeyFollow}},
		"an unknown part": {setting: ptr(vmconfig.Follow("no-such-cloud", "http://169.254.169.254/x")), wantCode: 2, wantLog: append([]string{vmconfig.KeyFollow, "no-such-cloud"}, known...)},
		"no part named":   {setting: ptr("http://169.254.169.254/x"), wantCode: 2, wantLog: []string{vmconfig.KeyFollow}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			if tc.setting != nil {
				if err := os.WriteFile(filepath.Join(dir, vmconfig.KeyFollow), []byte(*tc.setting), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			var log bytes.Buffer
			code := followMain(logging.New(&log, slog.LevelInfo), dir, filepath.Join(dir, "readiness.json"))
			var missing []string
			for _, w := range tc.wantLog {
				if !strings.Contains(log.String(), w) {
					missing = append(missing, w)
				}
			}
			if diff := cmp.Diff([2]any{tc.wantCode, []string(nil)}, [2]any{code, missing}); diff != "" {
				t.Errorf("the exit code and what the log does not name (-want +got):\n%s\nlog: %s", diff, log.String())
			}
		})
	}
	if code := followMain(logging.New(&bytes.Buffer{}, slog.LevelInfo), "", ""); code != 2 {
		t.Errorf("-follow without -boot: exit %d, want 2", code)
	}
}

func ptr(s string) *string { return &s }
