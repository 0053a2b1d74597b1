package providerstack

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// RunTool runs a cloud's own command-line tool (hcloud, aws) at path
// against the stack's fake, with env added to the test's environment,
// and returns what it wrote to stdout; it fails t, with both outputs,
// when the tool fails or takes over two minutes. The fake listens on
// loopback, so no proxy of the environment stands between.
func RunTool(t *testing.T, path string, args []string, env ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Env = append(append(os.Environ(), env...), "NO_PROXY=127.0.0.1", "no_proxy=127.0.0.1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\nstdout:\n%s\nstderr:\n%s", filepath.Base(path), strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String()
}
