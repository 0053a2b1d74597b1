// Package emulator starts and stops Google's Firestore and Pub/Sub emulators,
// the ones the Google Cloud CLI ships, on loopback. The local stack and the
// test harness both use it, so there is one way the project runs them.
//
// It runs the emulators from the Cloud CLI's platform folder rather than
// "gcloud emulators … start": they start faster and need no gcloud
// configuration. The JVM is the process it starts — the Pub/Sub launcher
// execs java, and the Firestore emulator's jar is run the way its launcher
// runs it, without the shell in between — so that it dies with its parent
// (Pdeathsig): a test binary that panics, or is killed, leaves no emulator
// behind. Each emulator also runs in a process group of its own, which
// Stop ends whole.
package emulator

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Kind is one of the two emulators.
type Kind string

const (
	Firestore Kind = "firestore"
	PubSub    Kind = "pubsub"
)

// EnvVar is the variable through which Google's client libraries find the
// emulator of this kind.
func (k Kind) EnvVar() string {
	if k == Firestore {
		return "FIRESTORE_EMULATOR_HOST"
	}
	return "PUBSUB_EMULATOR_HOST"
}

// InstallHint says how to get the emulators on a machine that lacks them.
const InstallHint = "install the emulators with\n" +
	"  apt-get install google-cloud-cli-firestore-emulator google-cloud-cli-pubsub-emulator openjdk-17-jre-headless\n" +
	"or, for a Cloud CLI installed from its archive,\n" +
	"  gcloud components install cloud-firestore-emulator pubsub-emulator"

// ErrNotInstalled reports that the Cloud CLI or an emulator is missing.
var ErrNotInstalled = errors.New("emulator not installed")

// Options tune Start.
type Options struct {
	// Host is the host:port to listen on; empty picks a free loopback port.
	Host string
	// Args are extra arguments for the launcher, such as the Firestore
	// emulator's --functions_emulator.
	Args []string
	// Log receives the emulator's output; nil discards it. Start keeps the
	// last lines regardless, to explain a failure to start.
	Log io.Writer
	// Timeout bounds the wait until the emulator answers; default 5
	// minutes. An emulator that exits is reported at once; the bound is for
	// one that hangs, and a JVM starting on a busy machine (a CI runner, two
	// cores shared by several builds) takes well over a minute.
	Timeout time.Duration
}

// Process is a running emulator.
type Process struct {
	Kind Kind
	// Host is host:port, the value for Kind.EnvVar().
	Host string

	cmd  *exec.Cmd
	done chan struct{}
	tail *tailBuffer
}

// SDKRoot finds the Cloud CLI's installation folder: $CLOUDSDK_ROOT if set,
// else the folder above the real location of the gcloud on PATH.
func SDKRoot() (string, error) {
	if root := os.Getenv("CLOUDSDK_ROOT"); root != "" {
		return root, nil
	}
	gcloud, err := exec.LookPath("gcloud")
	if err != nil {
		return "", fmt.Errorf("%w: gcloud is not on PATH; %s", ErrNotInstalled, InstallHint)
	}
	real, err := filepath.EvalSymlinks(gcloud)
	if err != nil {
		return "", fmt.Errorf("resolving %s: %w", gcloud, err)
	}
	return filepath.Dir(filepath.Dir(real)), nil
}

// launcher returns the launcher and its arguments for kind on host.
func launcher(kind Kind, host string) (string, []string, error) {
	root, err := SDKRoot()
	if err != nil {
		return "", nil, err
	}
	h, port, err := net.SplitHostPort(host)
	if err != nil {
		return "", nil, fmt.Errorf("emulator host %q: %w", host, err)
	}
	var path, installed string
	var args []string
	switch kind {
	case Firestore:
		// What platform/cloud-firestore-emulator/cloud_firestore_emulator
		// runs, as a child of the shell rather than in its place.
		installed = filepath.Join(root, "platform", "cloud-firestore-emulator", "cloud-firestore-emulator.jar")
		path = "java"
		args = []string{"-Duser.language=en", "-cp", installed, "com.google.cloud.datastore.emulator.firestore.CloudFirestore",
			"start", "--host=" + h, "--port=" + port}
	case PubSub:
		// Its launcher execs java: the JVM takes the launcher's place.
		path = filepath.Join(root, "platform", "pubsub-emulator", "bin", "cloud-pubsub-emulator")
		installed = path
		args = []string{"--host=" + h, "--port=" + port}
	default:
		return "", nil, fmt.Errorf("unknown emulator kind %q", kind)
	}
	if _, err := os.Stat(installed); err != nil {
		return "", nil, fmt.Errorf("%w: the %s emulator is not in the Cloud CLI at %s (%v); %s", ErrNotInstalled, kind, root, err, InstallHint)
	}
	if _, err := exec.LookPath("java"); err != nil {
		return "", nil, fmt.Errorf("%w: the %s emulator needs Java 17 on PATH; %s", ErrNotInstalled, kind, InstallHint)
	}
	return path, args, nil
}

// Start launches an emulator and returns once it answers on its port. The
// emulator is stopped if ctx ends before that.
func Start(ctx context.Context, kind Kind, opts Options) (*Process, error) {
	host := opts.Host
	if host == "" {
		var err error
		if host, err = FreeHost(); err != nil {
			return nil, err
		}
	}
	path, args, err := launcher(kind, host)
	if err != nil {
		return nil, err
	}
	timeout := opts.Timeout
	if timeout == 0 {
		timeout = 5 * time.Minute
	}

	p := &Process{Kind: kind, Host: host, done: make(chan struct{}), tail: &tailBuffer{max: 8 << 10}}
	var out io.Writer = p.tail
	if opts.Log != nil {
		out = io.MultiWriter(p.tail, opts.Log)
	}
	p.cmd = exec.Command(path, append(args, opts.Args...)...)
	p.cmd.Stdout, p.cmd.Stderr = out, out
	// Killed when the thread that started it goes, which, locked, is when
	// this process goes; in a process group of its own, which Stop ends.
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := startLocked(p.cmd); err != nil {
		return nil, fmt.Errorf("starting the %s emulator (%s): %w", kind, path, err)
	}
	go func() { _ = p.cmd.Wait(); close(p.done) }()

	if err := p.waitReady(ctx, timeout); err != nil {
		p.Stop()
		return nil, fmt.Errorf("the %s emulator on %s did not become ready: %w\nits last output:\n%s", kind, host, err, p.tail.String())
	}
	return p, nil
}

// startLocked starts cmd from a thread that lives as long as the process.
// Pdeathsig fires when the thread that forked the child exits, and the Go
// runtime may end a thread whose goroutine locked it and returned; a
// goroutine that locks its thread and never returns keeps that thread for
// good.
func startLocked(cmd *exec.Cmd) error {
	starts <- cmd
	return <-started
}

var (
	starts  = make(chan *exec.Cmd)
	started = make(chan error)
)

func init() {
	go func() {
		runtime.LockOSThread()
		for cmd := range starts {
			started <- cmd.Start()
		}
	}()
}

// waitReady polls GET / until the emulator answers "Ok".
func (p *Process) waitReady(ctx context.Context, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	client := &http.Client{Timeout: time.Second}
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+p.Host+"/", nil)
		if resp, err := client.Do(req); err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK && strings.TrimSpace(string(body)) == "Ok" {
				return nil
			}
		}
		select {
		case <-p.done:
			return fmt.Errorf("it exited (%v)", p.cmd.ProcessState)
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// Stop ends the emulator and waits for it, killing it if it has not gone
// after a few seconds. Stopping twice is harmless.
func (p *Process) Stop() {
	if p == nil || p.cmd == nil || p.cmd.Process == nil {
		return
	}
	pgid := -p.cmd.Process.Pid
	_ = syscall.Kill(pgid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(5 * time.Second):
		_ = syscall.Kill(pgid, syscall.SIGKILL)
		<-p.done
	}
	// The JVM may outlive the launcher script by a moment.
	_ = syscall.Kill(pgid, syscall.SIGKILL)
}

// Pid is the emulator's process id: the JVM's.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// FreeHost returns 127.0.0.1:PORT for a port that was free a moment ago.
func FreeHost() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("finding a free loopback port: %w", err)
	}
	defer l.Close()
	return "127.0.0.1:" + strconv.Itoa(l.Addr().(*net.TCPAddr).Port), nil
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	buf []byte
	max int
}

func (t *tailBuffer) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, b...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(b), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}
