package imagetest

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// ExitReboot is systemd-nspawn's exit status when the system inside asked
// to reboot: the caller boots the same root again.
const ExitReboot = 133

// Container is one boot of a root file system under systemd-nspawn, with
// systemd as its PID 1, in a network namespace made beforehand.
type Container struct {
	Name    string
	Dir     string
	Started time.Time

	cmd  *exec.Cmd
	done chan struct{}
}

// Boot starts systemd-nspawn on dir and returns at once; the system boots
// in the background. --register=no and --keep-unit keep nspawn away from
// systemd-machined and the host's service manager, which this machine's
// PID 1 is not; --machine sets the name a leftover is found by;
// --resolv-conf=off keeps the image's resolver (the metadata server's
// address); CAP_NET_ADMIN, which nspawn grants with --private-network but
// not with a namespace of the caller's, lets root inside set up nftables
// as root on a VM does, in a namespace that is the test's alone. The
// console goes to console.
func Boot(name, dir string, ns *Netns, console io.Writer) (*Container, error) {
	c := &Container{Name: name, Dir: dir, done: make(chan struct{})}
	c.cmd = exec.Command("systemd-nspawn", "--quiet", "--boot", "--register=no", "--keep-unit",
		"--console=read-only", "--resolv-conf=off", "--capability=CAP_NET_ADMIN", "--machine="+name, "--directory="+dir,
		"--network-namespace-path="+ns.Path())
	c.cmd.Stdout, c.cmd.Stderr = console, console
	// Should the test process die, nspawn is told to stop, and it powers
	// the container off.
	c.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	c.Started = time.Now()
	if err := c.cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting systemd-nspawn on %s: %w", dir, err)
	}
	go func() { _ = c.cmd.Wait(); close(c.done) }()
	return c, nil
}

// Exited reports whether nspawn has ended, and its status if so.
func (c *Container) Exited() (bool, int) {
	select {
	case <-c.done:
		return true, c.cmd.ProcessState.ExitCode()
	default:
		return false, 0
	}
}

// Wait waits for nspawn to end and returns its exit status.
func (c *Container) Wait(ctx context.Context) (int, error) {
	select {
	case <-c.done:
		return c.cmd.ProcessState.ExitCode(), nil
	case <-ctx.Done():
		return 0, fmt.Errorf("container %s did not stop: %w", c.Name, ctx.Err())
	}
}

// Leader is the PID, on the host, of the container's systemd: nspawn's
// child once it has exec'd systemd.
func (c *Container) Leader() (int, error) {
	pid := c.cmd.Process.Pid
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid))
	if err != nil {
		return 0, fmt.Errorf("container %s: reading nspawn's children: %w", c.Name, err)
	}
	for _, f := range strings.Fields(string(raw)) {
		child, _ := strconv.Atoi(f)
		if comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", child)); strings.TrimSpace(string(comm)) == "systemd" {
			return child, nil
		}
	}
	return 0, fmt.Errorf("container %s: nspawn (pid %d) has no systemd child yet", c.Name, pid)
}

// Exec runs a command inside the running container, in all its namespaces,
// and returns its combined output.
func (c *Container) Exec(ctx context.Context, args ...string) ([]byte, error) {
	leader, err := c.Leader()
	if err != nil {
		return nil, err
	}
	nsargs := append([]string{"--target", strconv.Itoa(leader), "--mount", "--uts", "--ipc", "--net", "--pid", "--"}, args...)
	out, err := exec.CommandContext(ctx, "nsenter", nsargs...).CombinedOutput()
	if err != nil {
		return out, fmt.Errorf("in container %s: %s: %w: %s", c.Name, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return out, nil
}

// Journal is the last lines of the container's journal: read live while it
// runs, from its root file system after it stopped.
func (c *Container) Journal(ctx context.Context, lines int) string {
	args := []string{"--no-pager", "-o", "short-monotonic", "-n", strconv.Itoa(lines)}
	if done, _ := c.Exited(); !done {
		out, err := c.Exec(ctx, append([]string{"journalctl", "-b"}, args...)...)
		if err == nil {
			return string(out)
		}
	}
	out, err := exec.CommandContext(ctx, "journalctl", append([]string{"--root=" + c.Dir}, args...)...).CombinedOutput()
	if err != nil {
		return fmt.Sprintf("(no journal of container %s: %v: %s)", c.Name, err, out)
	}
	return string(out)
}

// Reboot reboots the system from inside, as `reboot` on a VM does, and
// waits for nspawn to exit with ExitReboot.
func (c *Container) Reboot(ctx context.Context) error {
	if _, err := c.Exec(ctx, "systemctl", "reboot"); err != nil {
		return err
	}
	code, err := c.Wait(ctx)
	if err != nil {
		return err
	}
	if code != ExitReboot {
		return fmt.Errorf("container %s: nspawn exited %d on reboot, not %d", c.Name, code, ExitReboot)
	}
	return nil
}

// Stop powers the container off (nspawn turns SIGTERM into a clean
// shutdown) and kills it if it has not gone within the grace period. It is
// harmless on a container that has already stopped.
func (c *Container) Stop(grace time.Duration) error {
	if done, _ := c.Exited(); done {
		return nil
	}
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.done:
		return nil
	case <-time.After(grace):
	}
	leader, _ := c.Leader()
	_ = c.cmd.Process.Kill()
	if leader > 0 {
		_ = syscall.Kill(leader, syscall.SIGKILL)
	}
	select {
	case <-c.done:
		return fmt.Errorf("container %s did not power off within %s; killed", c.Name, grace)
	case <-time.After(5 * time.Second):
		return fmt.Errorf("container %s: nspawn (pid %d) survived SIGKILL", c.Name, c.cmd.Process.Pid)
	}
}

// KillLeftovers ends what an earlier run that died left running: every
// systemd-nspawn started with a --machine= name beginning with prefix, and
// every process whose root directory lies under workDir (the systems those
// nspawns booted, which outlive a killed nspawn). It finds them by reading
// /proc and signals each by its PID; nothing else is touched.
func KillLeftovers(prefix, workDir string) error {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return fmt.Errorf("reading /proc: %w", err)
	}
	self := os.Getpid()
	var killed []string
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		if leftover(pid, prefix, workDir) {
			if err := syscall.Kill(pid, syscall.SIGKILL); err == nil {
				killed = append(killed, e.Name())
			}
		}
	}
	if len(killed) > 0 {
		// Give the kernel a moment to reap them before their namespaces
		// and folders are removed.
		time.Sleep(time.Second)
	}
	return nil
}

func leftover(pid int, prefix, workDir string) bool {
	if root, err := os.Readlink(fmt.Sprintf("/proc/%d/root", pid)); err == nil && workDir != "" {
		if rel, err := filepath.Rel(workDir, root); err == nil && !strings.HasPrefix(rel, "..") && rel != "." {
			return true
		}
	}
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return false
	}
	args := strings.Split(string(raw), "\x00")
	if len(args) == 0 || filepath.Base(args[0]) != "systemd-nspawn" {
		return false
	}
	for _, a := range args[1:] {
		if strings.HasPrefix(a, "--machine="+prefix) {
			return true
		}
	}
	return false
}
