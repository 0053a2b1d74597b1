package main

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/internal/version/versiontest"
)

// TestVersionCommand: `egress version` says CHANGELOG.md's newest
// release, offline (no API is asked: the API here is one that does not
// answer).
func TestVersionCommand(t *testing.T) {
	code, stdout, stderr := egress("http://127.0.0.1:1", "version")
	if code != exitOK {
		t.Fatalf("egress version: exit %d\n%s", code, stderr)
	}
	if diff := cmp.Diff("egress "+versiontest.Changelog(t)+"\n", stdout); diff != "" {
		t.Errorf("egress version (-CHANGELOG.md's newest +what it printed):\n%s", diff)
	}
}
