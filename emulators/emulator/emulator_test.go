package emulator_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/egress-proxies/egress/emulators/emulator"
)

func TestMissingSDKSaysHowToInstall(t *testing.T) {
	t.Setenv("CLOUDSDK_ROOT", t.TempDir())
	_, err := emulator.Start(context.Background(), emulator.Firestore, emulator.Options{})
	if !errors.Is(err, emulator.ErrNotInstalled) {
		t.Fatalf("Start with an empty SDK folder: %v, want ErrNotInstalled", err)
	}
	if !strings.Contains(err.Error(), "apt-get install google-cloud-cli-firestore-emulator") {
		t.Errorf("error %q does not say how to install the emulator", err)
	}
}

// TestStartFailsLoudly occupies the port the emulator is told to use: Start
// must fail with the emulator's own output rather than hang or succeed.
func TestStartFailsLoudly(t *testing.T) {
	if _, err := emulator.SDKRoot(); err != nil && os.Getenv("CI") != "true" {
		t.Skipf("skipping: %v", err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	_, err = emulator.Start(context.Background(), emulator.PubSub, emulator.Options{Host: l.Addr().String(), Timeout: 3 * time.Second})
	if err == nil {
		t.Fatalf("Start on a port that is taken succeeded")
	}
	if !strings.Contains(err.Error(), "did not become ready") {
		t.Errorf("error %q does not say the emulator failed to start", err)
	}
}

func TestStartAndStop(t *testing.T) {
	if _, err := emulator.SDKRoot(); err != nil && os.Getenv("CI") != "true" {
		t.Skipf("skipping: %v", err)
	}
	p, err := emulator.Start(context.Background(), emulator.PubSub, emulator.Options{})
	if err != nil {
		t.Fatal(err)
	}
	p.Stop()
	if c, err := net.DialTimeout("tcp", p.Host, time.Second); err == nil {
		c.Close()
		t.Errorf("the emulator still answers on %s after Stop", p.Host)
	}
}

// childEnv makes the test binary the parent of an emulator, for
// TestEmulatorDiesWithItsParent: it starts one, prints the emulator's pid
// and host, and waits to be killed.
const childEnv = "EGRESS_EMULATOR_TEST_PARENT"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		p, err := emulator.Start(context.Background(), emulator.Kind(os.Getenv(childEnv)), emulator.Options{})
		if err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		fmt.Println(p.Pid(), p.Host)
		select {}
	}
	os.Exit(m.Run())
}

// TestEmulatorDiesWithItsParent kills, with SIGKILL, a process that started
// an emulator — as a panicking or killed test binary ends, with no cleanup
// run — and requires the emulator's JVM to be gone and its port closed.
func TestEmulatorDiesWithItsParent(t *testing.T) {
	if _, err := emulator.SDKRoot(); err != nil && os.Getenv("CI") != "true" {
		t.Skipf("skipping: %v", err)
	}
	for _, kind := range []emulator.Kind{emulator.Firestore, emulator.PubSub} {
		t.Run(string(kind), func(t *testing.T) {
			exe, err := os.Executable()
			if err != nil {
				t.Fatal(err)
			}
			child := exec.Command(exe, "-test.run=^$")
			child.Env = append(os.Environ(), childEnv+"="+string(kind))
			out, err := child.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := child.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { child.Process.Kill(); child.Wait() })
			line, err := bufio.NewReader(out).ReadString('\n')
			if err != nil {
				t.Fatalf("the parent process said nothing: %v", err)
			}
			var pid int
			var host string
			if _, err := fmt.Sscan(line, &pid, &host); err != nil {
				t.Fatalf("the parent process said %q: %v", line, err)
			}
			if !alive(pid) {
				t.Fatalf("emulator %d is not running while its parent is", pid)
			}
			child.Process.Kill()
			child.Wait()
			// The JVM's threads end a moment after its first one does, and
			// its port closes with the last.
			deadline := time.Now().Add(time.Minute)
			for alive(pid) || accepts(host) {
				if time.Now().After(deadline) {
					syscall.Kill(pid, syscall.SIGKILL)
					t.Fatalf("emulator %d (on %s) outlived its killed parent by a minute", pid, host)
				}
				time.Sleep(100 * time.Millisecond)
			}
		})
	}
}

func accepts(host string) bool {
	c, err := net.DialTimeout("tcp", host, 200*time.Millisecond)
	if err == nil {
		c.Close()
	}
	return err == nil
}

// alive reports whether pid is a process that has not exited: a zombie,
// waiting for init to reap it, has.
func alive(pid int) bool {
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return false
	}
	for _, l := range strings.Split(string(status), "\n") {
		if st, ok := strings.CutPrefix(l, "State:"); ok {
			return !strings.HasPrefix(strings.TrimSpace(st), "Z")
		}
	}
	return true
}
