package testenv

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestFind: the tool found is used only when it is one the tests support,
// and the reason otherwise names what was found, what it printed and what
// is needed.
func TestFind(t *testing.T) {
	dir := t.TempDir()
	script := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	awsV1 := script("aws-v1", `echo "aws-cli/1.45.11 Python/3.11.7 Linux/6.18 botocore/1.43.11"`)
	awsV2 := script("aws-v2", `echo "aws-cli/2.9.19 Python/3.11.2 Linux/6.18 source/x86_64.debian.12 prompt/off"`)
	shim := script("aws-shim", `echo "pyenv: aws: command not found" >&2; exit 127`)
	snap := script("chromium-browser", `echo "Command '/usr/bin/chromium-browser' requires the chromium snap to be installed." >&2; exit 1`)
	chromium := script("chromium", `echo "Chromium 156.0.8078.114 built on Debian GNU/Linux 12 (bookworm)"`)
	az := script("az", `printf '{\n  "azure-cli": "2.45.0",\n  "azure-cli-core": "2.45.0"\n}\n'`)
	missing := filepath.Join(dir, "not-there")

	cases := map[string]struct {
		reason     string
		tool       Tool
		candidates []string
		wantPath   string
		wantErr    []string // what the reason must say
	}{
		"aws v1 from pip": {
			reason:     "AWS CLI v1 refuses --no-cli-pager: skip, naming its version and what is needed",
			tool:       AWSCLI,
			candidates: []string{missing, awsV1},
			wantErr:    []string{awsV1, "aws-cli/1.45.11", "AWS CLI version 2", "version 1", "Debian's awscli"},
		},
		"aws v2": {
			reason:     "Debian's awscli is supported",
			tool:       AWSCLI,
			candidates: []string{awsV2},
			wantPath:   awsV2,
		},
		"aws v1 first, v2 after it": {
			reason:     "the first supported candidate is taken",
			tool:       AWSCLI,
			candidates: []string{awsV1, awsV2},
			wantPath:   awsV2,
		},
		"a shim for an aws that is not installed": {
			reason:     "a version manager's shim exits non-zero",
			tool:       AWSCLI,
			candidates: []string{shim},
			wantErr:    []string{shim, "pyenv: aws: command not found", "exit status 127"},
		},
		"no aws": {
			reason:     "nothing found: not installed, and where it comes from",
			tool:       AWSCLI,
			candidates: []string{missing},
			wantErr:    []string{"aws is not installed", "scripts/install-deps.sh"},
		},
		"Ubuntu's chromium-browser without the snap": {
			reason:     "it only says to install the snap",
			tool:       Chromium,
			candidates: []string{snap},
			wantErr:    []string{snap, "requires the chromium snap"},
		},
		"Debian's chromium": {
			reason:     "supported",
			tool:       Chromium,
			candidates: []string{snap, chromium},
			wantPath:   chromium,
		},
		"Debian's azure-cli": {
			reason:     "az version names azure-cli 2",
			tool:       AzureCLI,
			candidates: []string{missing, az},
			wantPath:   az,
		},
		"something else named az": {
			reason:     "not Azure's CLI",
			tool:       AzureCLI,
			candidates: []string{awsV2},
			wantErr:    []string{"Azure CLI version 2", "does not say it is one"},
		},
		"something else named gcloud": {
			reason:     "not Google's Cloud CLI",
			tool:       Gcloud,
			candidates: []string{awsV2},
			wantErr:    []string{"Google's Cloud CLI", "does not say it is one"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			tool := tc.tool
			tool.Candidates = tc.candidates
			path, err := Find(tool)
			if diff := cmp.Diff(tc.wantPath, path); diff != "" {
				t.Errorf("%s: path (-want +got):\n%s", tc.reason, diff)
			}
			var msg string
			if err != nil {
				msg = err.Error()
			}
			if (len(tc.wantErr) > 0) != (err != nil) {
				t.Fatalf("%s: error %v, want one saying %q", tc.reason, err, tc.wantErr)
			}
			for _, w := range tc.wantErr {
				if !strings.Contains(msg, w) {
					t.Errorf("%s: the reason %q does not say %q", tc.reason, msg, w)
				}
			}
		})
	}
}
