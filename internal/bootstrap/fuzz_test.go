package bootstrap_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/egress-proxies/egress/internal/bootstrap"
	"github.com/egress-proxies/egress/internal/proxy"
)

// FuzzRender: whatever a request carries, a script that Render accepts is
// valid bash, and every value from the request stays inert in it: running
// the script's variable section (every line before its first function)
// under bash, in an empty directory with an empty environment, executes
// nothing but assignments and the shell's own settings, and leaves each
// value the request gave as one whole, unchanged word. Planted $(…),
// backquotes, quotes and newlines are in the seed corpus
// (testdata/fuzz/FuzzRender); the fuzzer mutates from there. The test reads the script through Render only, so a new
// script body (another proxy engine) keeps it meaningful.
func FuzzRender(f *testing.F) {
	if _, err := exec.LookPath("bash"); err != nil {
		f.Skip("no bash")
	}
	add := func(port int, ranges, ports, user, password string) {
		f.Add(port, ranges, ports, user, password)
	}
	add(3128, "203.0.113.0/24,2001:db8::/32", "", creds.Username, creds.Password)
	add(8080, "10.0.0.0/8", "443,80,8443", "a", "Zq8Rk3Vw1Ls5Nt7B")
	f.Fuzz(func(t *testing.T, port int, ranges, ports, user, password string) {
		c := bootstrap.Config{
			Port:                int32(port),
			AllowedSourceRanges: strings.Split(ranges, ","),
			Credentials:         proxy.Credentials{Username: user, Password: password},
		}
		if int(c.Port) != port {
			return // not a port the spec could carry
		}
		if ports != "" {
			for _, p := range strings.Split(ports, ",") {
				n, err := strconv.ParseInt(p, 10, 32)
				if err != nil {
					return
				}
				c.ConnectPorts = append(c.ConnectPorts, int32(n))
			}
		}
		script, err := bootstrap.Render(c)
		if err != nil {
			return // refused: nothing reaches a VM
		}
		dir := t.TempDir()
		path := filepath.Join(dir, "startup-script.sh")
		if err := os.WriteFile(path, []byte(script), 0o600); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command("bash", "-n", path).CombinedOutput(); err != nil {
			t.Fatalf("bash -n refuses the script rendered from %+v: %v\n%s", c, err, out)
		}
		executed, words := runVariables(t, dir, variableSection(script))
		for _, cmd := range executed {
			if !harmless(cmd) {
				t.Errorf("the variable section executed %q, from %+v", cmd, c)
			}
		}
		if _, err := os.Stat(filepath.Join(dir, "pwned")); err == nil {
			t.Errorf("a planted command ran, from %+v", c)
		}
		// The credentials reach the VM as the engine's configuration, a
		// salted hash in metadata (EngineConfig), never in the script.
		if c.Credentials.Password != "" && words[c.Credentials.Password] {
			t.Errorf("the script's variables hold the password, from %+v", c)
		}
		for _, v := range requestValues(c) {
			if !words[v] {
				t.Errorf("value %q from the request is not one whole word of the script's variables, from %+v", v, c)
			}
		}
	})
}

// functionStart is a shell function's first line: where the variable
// section ends.
var functionStart = regexp.MustCompile(`(?m)^[A-Za-z_][A-Za-z0-9_]*\(\)\s*\{`)

// variableSection is the script up to its first function.
func variableSection(script string) string {
	if loc := functionStart.FindStringIndex(script); loc != nil {
		return script[:loc[0]]
	}
	return script
}

// runVariables runs section under bash in dir with an empty environment
// and no PATH, tracing every simple command it executes (set -T carries
// the trace into command substitutions), and returns those commands and
// every value a variable then holds, array elements one by one.
func runVariables(t *testing.T, dir, section string) (executed []string, words map[string]bool) {
	t.Helper()
	const prologue = `set -T
trap 'printf "%s\0" "$BASH_COMMAND" >>"$EGRESS_TRACE"' DEBUG
`
	// The dump runs after the trace is off; a variable's elements go out
	// NUL-separated, so a value with a newline or a quote stays one.
	const epilogue = `
trap - DEBUG
for __n in $(compgen -v); do
	case $__n in BASH*|EGRESS_TRACE|FUNCNAME|PIPESTATUS|GROUPS|DIRSTACK|__n) continue ;; esac
	declare -n __r=$__n
	printf '%s\0' "${__r[@]}"
	declare +n __r
	unset -n __r
done
`
	trace := filepath.Join(dir, "trace")
	cmd := exec.Command("bash", "--norc", "--noprofile", "-c", prologue+section+epilogue)
	cmd.Dir = dir
	cmd.Env = []string{"EGRESS_TRACE=" + trace, "PATH=" + filepath.Join(dir, "no-commands")}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("the variable section fails under bash: %v\n%s\n---\n%s", err, stderr.String(), section)
	}
	raw, _ := os.ReadFile(trace)
	for _, c := range strings.Split(string(raw), "\x00") {
		if c != "" {
			executed = append(executed, c)
		}
	}
	words = map[string]bool{}
	for _, w := range strings.Split(stdout.String(), "\x00") {
		words[w] = true
	}
	return executed, words
}

// harmlessCommand is what a variable section may run: assignments, and
// the shell's own settings (and the end of the trace itself).
var harmlessCommand = regexp.MustCompile(`^(readonly|declare|typeset|export|local|set|umask|shopt)( |$)|^[A-Za-z_][A-Za-z0-9_]*(\[[^]]*\])?\+?=`)

func harmless(cmd string) bool { return cmd == "trap - DEBUG" || harmlessCommand.MatchString(cmd) }

// requestValues are the values of c as the script must hold them: each
// range in its canonical form, each port. The credentials are not among them: they reach the VM as a
// salted hash in the engine's configuration.
func requestValues(c bootstrap.Config) []string {
	// The port is the one value of the request the script carries: the
	// ranges and ports reach the VM in egress-config, which the agent
	// applies (internal/vm/agent).
	return []string{strconv.Itoa(int(c.Port))}
}
