// Package versiontest reads CHANGELOG.md's newest release for the tests
// that hold each place the version shows (the CLI, the engine, the
// functions' start line, the API's header) to it.
package versiontest

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/egress-proxies/egress/internal/version"
)

// Changelog is CHANGELOG.md's newest release, read from the
// repository's root above the test's package.
func Changelog(t *testing.T) string {
	t.Helper()
	dir, _ := os.Getwd()
	for {
		raw, err := os.ReadFile(filepath.Join(dir, "CHANGELOG.md"))
		if err == nil {
			v, err := version.Newest(string(raw))
			if err != nil {
				t.Fatalf("CHANGELOG.md: %v", err)
			}
			return v
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no CHANGELOG.md in any folder above the test")
		}
		dir = parent
	}
}
