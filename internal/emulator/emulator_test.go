package emulator_test

import (
	"context"
	"errors"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/egress-proxies/egress/internal/emulator"
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
	_, err = emulator.Start(context.Background(), emulator.PubSub, emulator.Options{Host: l.Addr().String(), Timeout: 8 * time.Second})
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
