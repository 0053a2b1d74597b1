package version_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	. "github.com/egress-proxies/egress/internal/version"
	"github.com/egress-proxies/egress/internal/version/versiontest"
)

// TestVersionIsTheChangelogs: Version is CHANGELOG.md's newest release, so
// what the binaries and the API say is a release a reader can look up.
func TestVersionIsTheChangelogs(t *testing.T) {
	want := versiontest.Changelog(t)
	if diff := cmp.Diff(want, Version); diff != "" {
		t.Errorf("version.Version is not CHANGELOG.md's newest release (-changelog +Version):\n%s", diff)
	}
}

func TestNewest(t *testing.T) {
	cases := map[string]struct {
		reason  string
		text    string
		want    string
		wantErr bool
	}{
		"First": {
			reason: "the first release heading, past Unreleased",
			text:   "# Changelog\n\n## [Unreleased]\n\n## [1.2.0] - 2026-12-06\n\n## [1.1.0] - 2026-11-01\n",
			want:   "1.2.0",
		},
		"PreRelease": {
			reason: "a pre-release is a release heading too",
			text:   "## [2.0.0-rc.1] - 2026-12-06\n",
			want:   "2.0.0-rc.1",
		},
		"None": {
			reason:  "a changelog without a release is an error, not an empty version",
			text:    "# Changelog\n\n## [Unreleased]\n",
			wantErr: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := Newest(tc.text)
			if (err != nil) != tc.wantErr {
				t.Fatalf("%s: error %v, want error: %v", tc.reason, err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s (-want +got):\n%s", tc.reason, diff)
			}
		})
	}
}
