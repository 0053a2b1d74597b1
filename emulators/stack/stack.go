// Package stack runs the local stack — dev/localstack, what
// `make run` runs — as a process of its own, on free loopback ports, and
// stops it as Ctrl-C does. The end-to-end test and the benchmark drive the
// product through it from outside only: over HTTP, and by reading the
// functions' log lines.
package stack

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/egress-proxies/egress/emulators/emulator"
)

// Command is the package of the local stack's command.
const Command = "github.com/egress-proxies/egress/dev/localstack"

// readyLine is what the stack prints on its standard error once it serves.
const readyLine = "egress local stack ready"

// Build compiles the local stack into dir and returns the binary's path.
func Build(ctx context.Context, dir string) (string, error) {
	bin := filepath.Join(dir, "localstack")
	out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, Command).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build %s: %w\n%s", Command, err, out)
	}
	return bin, nil
}

// Options configure Start.
type Options struct {
	// Project is the stack's project (GOOGLE_CLOUD_PROJECT).
	Project string
	// Env are further KEY=VALUE settings of the stack (GC_INTERVAL, …).
	Env []string
	// Stdout receives the stack's standard output: the functions' log
	// lines when LOG_FORMAT=json. Nil discards it.
	Stdout io.Writer
	// Stderr receives the stack's standard error: its own log and, with
	// the default LOG_FORMAT, the functions'. Nil discards it.
	Stderr io.Writer
	// Timeout bounds the wait until the stack is ready; default 12 minutes.
	Timeout time.Duration
}

// Stack is a running local stack.
type Stack struct {
	// URL is where the API and the functions are served.
	URL string
	// FirestoreHost and PubSubHost are where its emulators listen.
	FirestoreHost, PubSubHost string
	Project                   string

	cmd *exec.Cmd
	// exited is closed once the process has ended, with exitErr set.
	exited  chan struct{}
	exitErr error
	// pipes is closed when both output pipes are read to the end.
	pipes chan struct{}
}

// Start runs the stack binary bin on free loopback ports and returns once it
// says it is ready.
func Start(ctx context.Context, bin string, opts Options) (*Stack, error) {
	if opts.Timeout == 0 {
		// A bound for a stack that hangs, not a measure: it starts two
		// emulators (each bounded by emulators/emulator's own wait), and a
		// stack that exits is reported at once.
		opts.Timeout = 12 * time.Minute
	}
	if opts.Stdout == nil {
		opts.Stdout = io.Discard
	}
	if opts.Stderr == nil {
		opts.Stderr = io.Discard
	}
	var hosts [3]string
	for i := range hosts {
		h, err := emulator.FreeHost()
		if err != nil {
			return nil, err
		}
		hosts[i] = h
	}
	_, port, _ := net.SplitHostPort(hosts[0])
	s := &Stack{
		URL:           "http://" + hosts[0],
		FirestoreHost: hosts[1],
		PubSubHost:    hosts[2],
		Project:       opts.Project,
		exited:        make(chan struct{}),
		pipes:         make(chan struct{}),
	}
	s.cmd = exec.Command(bin)
	// Later settings win, so the stack's own ports and project override
	// whatever the caller's environment (make test's emulators) says.
	s.cmd.Env = append(append(os.Environ(), opts.Env...),
		"PORT="+port, "GOOGLE_CLOUD_PROJECT="+opts.Project,
		emulator.Firestore.EnvVar()+"="+s.FirestoreHost, emulator.PubSub.EnvVar()+"="+s.PubSubHost)
	stdout, err := s.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stderr, err := s.cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := s.cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting the local stack %s: %w", bin, err)
	}
	ready := make(chan struct{})
	outDone := make(chan struct{})
	go func() {
		defer close(outDone)
		io.Copy(opts.Stdout, stdout)
	}()
	go func() {
		defer close(s.pipes)
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		seen := false
		for sc.Scan() {
			fmt.Fprintln(opts.Stderr, sc.Text())
			if !seen && strings.Contains(sc.Text(), readyLine) {
				seen = true
				close(ready)
			}
		}
		io.Copy(opts.Stderr, stderr)
		<-outDone
	}()
	go func() {
		// Wait closes the pipes, so the readers must be done first.
		<-s.pipes
		s.exitErr = s.cmd.Wait()
		close(s.exited)
	}()

	select {
	case <-ready:
		return s, nil
	case <-s.exited:
		return nil, fmt.Errorf("the local stack exited before it was ready: %v", s.exitErr)
	case <-ctx.Done():
		s.Stop(stopTimeout)
		return nil, ctx.Err()
	case <-time.After(opts.Timeout):
		s.Stop(stopTimeout)
		return nil, fmt.Errorf("the local stack was not ready within %s", opts.Timeout)
	}
}

// stopTimeout is how long a stack that failed to start gets to stop its
// emulators.
const stopTimeout = 20 * time.Second

// Pid is the process id of the stack, the process that runs the functions.
func (s *Stack) Pid() int { return s.cmd.Process.Pid }

// Exited reports whether the stack's process has ended.
func (s *Stack) Exited() bool {
	select {
	case <-s.exited:
		return true
	default:
		return false
	}
}

// Stop interrupts the stack as Ctrl-C does and waits up to timeout for it to
// stop its emulators and exit. It returns the exit error, if any.
func (s *Stack) Stop(timeout time.Duration) error {
	if s.Exited() {
		return s.exitErr
	}
	if err := s.cmd.Process.Signal(syscall.SIGINT); err != nil {
		return err
	}
	select {
	case <-s.exited:
		return s.exitErr
	case <-time.After(timeout):
		// Its emulators, in process groups of their own, may outlive it.
		s.cmd.Process.Kill()
		return errors.New("the local stack did not exit within " + timeout.String() + " of an interrupt; killed")
	}
}
