package imagetest

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// stopLine is the one line scripts/install-deps.sh stops with when the
// emulators' apt source cannot be reached: it names both packages and the
// command that adds Google's source.
var stopLine = regexp.MustCompile(`^install-deps: google-cloud-cli-firestore-emulator google-cloud-cli-pubsub-emulator come from Google's Cloud CLI apt source, .* add the source with: curl -fsSL https://packages\.cloud\.google\.com/apt/doc/apt-key\.gpg \| gpg --dearmor -o /usr/share/keyrings/cloud\.google\.gpg && echo 'deb \[signed-by=/usr/share/keyrings/cloud\.google\.gpg\] https://packages\.cloud\.google\.com/apt cloud-sdk main' > /etc/apt/sources\.list\.d/google-cloud-sdk\.list && apt-get update$`)

// TestFreshMachine runs scripts/install-deps.sh in a copy of the Debian
// 13 root file system (debootstrap's minimal base, apt pointed at the
// host's Debian mirror alone) and checks that it either completes, with
// what make test needs on PATH, or stops with stopLine and nothing else of
// its own on stderr, having installed Debian's part first. Google's name
// resolves to loopback in the copy, so the test reaches no address but
// the mirror.
func TestFreshMachine(t *testing.T) {
	requireHost(t)
	if !imageOnly("fresh-machine") {
		t.Skip("EGRESS_IMAGE_ONLY does not name fresh-machine")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	src, _, err := Rootfs(ctx, Releases[0], os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(t.TempDir(), "root")
	if err := Copy(ctx, src, root); err != nil {
		t.Fatal(err)
	}
	script, err := os.ReadFile("../../../scripts/install-deps.sh")
	if err != nil {
		t.Fatal(err)
	}
	resolv, err := os.ReadFile("/etc/resolv.conf")
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteFiles(root, map[string]string{
		"root/install-deps.sh": string(script),
		"etc/resolv.conf":      string(resolv),
		"etc/hosts":            "127.0.0.1 localhost packages.cloud.google.com\n",
	}); err != nil {
		t.Fatal(err)
	}
	// As Boot starts a container: not registered with machined, no unit
	// of its own, the resolver the test wrote, a name of its own.
	nspawn := func(args ...string) *exec.Cmd {
		return exec.CommandContext(ctx, "systemd-nspawn", append([]string{"--quiet", "--pipe", "--register=no", "--keep-unit",
			"--resolv-conf=off", "--machine=egress-fresh-machine", "--directory=" + root}, args...)...)
	}
	cmd := nspawn("bash", "/root/install-deps.sh")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	var own []string
	for _, l := range strings.Split(stderr.String(), "\n") {
		if strings.HasPrefix(l, "install-deps:") {
			own = append(own, l)
		}
	}
	// PySocks, which the engine's UDP test runs, under Debian's python3.
	have := nspawn("sh", "-c", "command -v make gcc java chromium hcloud aws && test -f /usr/include/stdio.h && /usr/bin/python3 -c 'import socks'")
	if runErr == nil {
		if out, err := have.CombinedOutput(); err != nil {
			t.Errorf("install-deps completed, and what make test needs is not all there: %v\n%s", err, out)
		}
		return
	}
	if len(own) != 1 || !stopLine.MatchString(own[0]) {
		t.Fatalf("install-deps: %v; its lines on stderr %q, want the one line naming the emulator packages and the command that adds Google's source\nstdout:\n%s\nstderr:\n%s", runErr, own, stdout.String(), stderr.String())
	}
	if out, err := have.CombinedOutput(); err != nil {
		t.Errorf("install-deps stopped at Google's source without Debian's part installed first: %v\n%s", err, out)
	}
	t.Logf("stopped with: %s", own[0])
}
