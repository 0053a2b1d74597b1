// Package testenv finds the outside programs the tests drive (AWS's CLI,
// Azure's, Hetzner's, Google's, a Chromium) and says whether the one
// found is one the tests support. A developer's machine may hold
// another: AWS CLI v1 from pip first on PATH, Ubuntu's chromium-browser
// that only asks for the snap. A test then skips and says which program it found, what it printed
// and what it needs, instead of failing on the program's own error; under
// CI=true, where scripts/install-deps.sh has installed what the tests
// need, it fails, so that a green CI run means every test ran.
package testenv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Tool is an outside program a test drives and what it must be.
type Tool struct {
	// Name is how the reason names it: "aws".
	Name string
	// Candidates are the paths, or names looked up on PATH, tried in
	// order; the first that is supported is used.
	Candidates []string
	// VersionArgs are the arguments that make it print its version.
	VersionArgs []string
	// Check is given what VersionArgs printed (stdout and stderr) and
	// returns nil when the tests support that program, or what they need.
	Check func(out string) error
	// Install says where the supported one comes from.
	Install string
}

// Find returns the path of the first candidate the tool's Check accepts.
// Its error says what was found and why it will not do, or that none is
// installed.
func Find(tool Tool) (string, error) {
	var refused []string
	for _, c := range tool.Candidates {
		path, err := exec.LookPath(c)
		if err != nil {
			continue
		}
		out, err := version(path, tool.VersionArgs)
		if err == nil {
			err = tool.Check(out)
		}
		if err == nil {
			return path, nil
		}
		refused = append(refused, fmt.Sprintf("%s (%s %s: %q): %v", path, path, strings.Join(tool.VersionArgs, " "), firstLine(out), err))
	}
	if len(refused) == 0 {
		return "", fmt.Errorf("%s is not installed (%s)", tool.Name, tool.Install)
	}
	return "", fmt.Errorf("no %s the tests support: found %s; install %s", tool.Name, strings.Join(refused, "; "), tool.Install)
}

// Require returns the tool's path, or ends the test through Unavailable
// with Find's reason.
func Require(t testing.TB, tool Tool) string {
	t.Helper()
	path, err := Find(tool)
	if err != nil {
		Unavailable(t, err.Error())
	}
	return path
}

// Unavailable ends a test that cannot run here: a skip with the reason,
// or, under CI=true, a failure.
func Unavailable(t testing.TB, reason string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s; under CI it must be there (scripts/install-deps.sh)", reason)
	}
	t.Skipf("skipping: %s", reason)
}

// version runs the program with args and returns what it printed. A
// version manager's shim for a program that is not installed exits
// non-zero; a bound keeps one that hangs from holding the test.
func version(path string, args []string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, path, args...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("it exited with %w", err)
	}
	return string(out), nil
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return s
}

// AWSCLI is AWS's CLI version 2 (Debian's awscli is: 2.9 in Debian 12):
// the tests pass --no-cli-pager, which version 1 refuses. Debian's
// /usr/bin/aws is tried before PATH, where a version manager's shim may
// stand for another.
var AWSCLI = Tool{
	Name:        "aws",
	Candidates:  []string{"/usr/bin/aws", "aws"},
	VersionArgs: []string{"--version"},
	Check:       majorAtLeast(regexp.MustCompile(`aws-cli/(\d+)\.`), 2, "AWS CLI version 2"),
	Install:     "Debian's awscli, AWS CLI v2, which scripts/install-deps.sh installs",
}

// AzureCLI is Azure's CLI, az (Debian's azure-cli: 2.45 in Debian 12),
// version 2 (`az version` prints JSON naming "azure-cli"). Debian's
// /usr/bin/az is tried before PATH, where a version manager's shim or
// pip's may stand for another.
var AzureCLI = Tool{
	Name:        "az",
	Candidates:  []string{"/usr/bin/az", "az"},
	VersionArgs: []string{"version", "--output", "json"},
	Check:       majorAtLeast(regexp.MustCompile(`"azure-cli": "(\d+)\.`), 2, "Azure CLI version 2"),
	Install:     "Debian's azure-cli, which scripts/install-deps.sh installs",
}

// Hcloud is Hetzner's CLI with the global --poll-interval flag the tests
// set (Debian 12's hcloud-cli 1.30 has it, and prints "hcloud was not
// built properly" for its version, so the flag is what is checked).
var Hcloud = Tool{
	Name:        "hcloud",
	Candidates:  []string{"hcloud"},
	VersionArgs: []string{"--poll-interval", "10ms", "version"},
	Check:       func(string) error { return nil }, // an hcloud without the flag exits non-zero
	Install:     "Debian's hcloud-cli, which scripts/install-deps.sh installs",
}

// Gcloud is Google's Cloud CLI, the one that prints "Google Cloud SDK N".
var Gcloud = Tool{
	Name:        "gcloud",
	Candidates:  []string{"gcloud"},
	VersionArgs: []string{"version"},
	Check:       majorAtLeast(regexp.MustCompile(`(?m)^Google Cloud SDK (\d+)\.`), 1, "Google's Cloud CLI"),
	Install:     "Google's Cloud CLI, which scripts/install-deps.sh installs with the emulators",
}

// Chromium is a Chromium or Google Chrome that starts and names its
// version; Ubuntu's chromium-browser without the snap only says to
// install it, and exits non-zero.
var Chromium = Tool{
	Name:        "chromium",
	Candidates:  []string{"chromium", "chromium-browser", "google-chrome"},
	VersionArgs: []string{"--version"},
	Check:       majorAtLeast(regexp.MustCompile(`(?m)^(?:Chromium|Google Chrome) (\d+)\.`), 1, "a Chromium that names its version"),
	Install:     "Debian's chromium, which scripts/install-deps.sh installs",
}

// majorAtLeast checks that re's first group, a major version, is at least
// min; need names what is needed.
func majorAtLeast(re *regexp.Regexp, min int, need string) func(string) error {
	return func(out string) error {
		m := re.FindStringSubmatch(out)
		if m == nil {
			return errors.New("the tests need " + need + ", and this does not say it is one")
		}
		if n, err := strconv.Atoi(m[1]); err != nil || n < min {
			return fmt.Errorf("the tests need %s, and this is version %s", need, m[1])
		}
		return nil
	}
}
