package loadtest

import (
	"errors"
	"net"
	"os"
	"testing"
	"time"
)

// TestEchoWithinEndsOnAStalledTunnel: a tunnel that stops carrying fails
// the echo at its bound rather than holding the measurement, and a
// tunnel that carries passes.
func TestEchoWithinEndsOnAStalledTunnel(t *testing.T) {
	client, stalled := net.Pipe()
	defer client.Close()
	defer stalled.Close()
	go func() { // takes the byte, never answers
		b := make([]byte, 1)
		stalled.Read(b)
	}()
	if err := echoWithin(client, "x", 50*time.Millisecond); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("echo through a stalled tunnel: %v, want the deadline exceeded", err)
	}

	c, echo := net.Pipe()
	defer c.Close()
	defer echo.Close()
	go func() {
		b := make([]byte, 1)
		for {
			if _, err := echo.Read(b); err != nil {
				return
			}
			echo.Write(b)
		}
	}()
	if err := echoWithin(c, "y", time.Minute); err != nil {
		t.Fatalf("echo through a carrying tunnel: %v", err)
	}
}
