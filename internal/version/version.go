// Package version is the product's version, in one place: the CLI's
// `egress version`, the engine's `egress-proxy -version`, the functions'
// start log line and the API's Egress-Version header all read Version.
//
// It is a constant in the source, not a linker flag: Cloud Build builds
// the functions from the source archive with Google's Go buildpack, which
// takes no -ldflags, so a version set at link time would reach the CLI
// and the engine and never the functions. CHANGELOG.md's newest release
// is the same string; TestVersionIsTheChangelogs holds the two together,
// so a release is one edit of each, checked.
package version

import (
	"fmt"
	"regexp"
)

// Version is this source's release, in semantic versioning (semver.org)
// without the leading v.
const Version = "0.1.0"

// Header is the API's response header that carries Version.
const Header = "Egress-Version"

// releaseHeading is a release's heading in Keep a Changelog's format:
// "## [1.2.3] - 2026-12-06". The "Unreleased" heading does not match.
var releaseHeading = regexp.MustCompile(`(?m)^## \[(\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?)\] - \d{4}-\d{2}-\d{2}\s*$`)

// Newest is the version of the first release heading of a changelog in
// Keep a Changelog's format: the newest, since releases are listed newest
// first.
func Newest(changelog string) (string, error) {
	m := releaseHeading.FindStringSubmatch(changelog)
	if m == nil {
		return "", fmt.Errorf("the changelog has no release heading such as %q", "## [1.2.3] - 2026-12-06")
	}
	return m[1], nil
}
