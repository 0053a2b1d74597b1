package engine

import (
	"bufio"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/internal/vm/vmconfig"
)

// The credentials the tests' proxies hold.
const (
	testUser     = "alice"
	testPassword = "s3cretPasswordOf24Chars0"
)

// testResolver answers the names the tests use, and nothing else: no test
// resolves a real name.
type testResolver map[string][]netip.Addr

func (r testResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if a, ok := r[host]; ok {
		return a, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

var names = testResolver{
	"target.test": {netip.MustParseAddr("127.0.0.1")},
	// A name that lists an allowed address first and a denied one after.
	"mixed.test": {netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("169.254.169.254")},
}

func hashOf(t testing.TB, password string) string {
	t.Helper()
	h, err := vmconfig.NewPasswordHash(password)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// testConfig is a proxy that lets the loopback client reach loopback on
// ports, with the VM's deny list and loopback allowed as the local stack
// allows it.
func testConfig(t testing.TB, ports ...int) vmconfig.Config {
	return vmconfig.Config{
		Generation:          1,
		Listen:              "127.0.0.1:0",
		Users:               []vmconfig.User{{Name: testUser, PasswordHash: hashOf(t, testPassword)}},
		AllowedSourceRanges: []string{"127.0.0.0/8"},
		ConnectPorts:        ports,
		DenyDestinations:    vmconfig.DefaultDenyDestinations,
		AllowDestinations:   []string{"127.0.0.1/32"},
	}
}

// startProxy serves cfg on a loopback port until the test ends.
func startProxy(t testing.TB, cfg vmconfig.Config) (*Server, string) {
	t.Helper()
	return startProxyWith(t, cfg, Options{Resolver: names})
}

// startProxyWith serves cfg with opts on a loopback port until the test
// ends; each setup changes the Server before it serves (a seam).
func startProxyWith(t testing.TB, cfg vmconfig.Config, opts Options, setup ...func(*Server)) (*Server, string) {
	t.Helper()
	s, err := New(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range setup {
		f(s)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- s.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithCancel(context.Background())
		cancel() // no drain: close what is left
		s.Shutdown(ctx)
		if err := <-served; !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("Serve: %v, want http.ErrServerClosed", err)
		}
	})
	return s, ln.Addr().String()
}

// startEcho serves a TCP echo on loopback: what a tunnel's far end sends
// back is what went in.
func startEcho(t testing.TB) (addr string, port int) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				io.Copy(c, c)
				c.(*net.TCPConn).CloseWrite()
				c.Close()
			}()
		}
	}()
	return ln.Addr().String(), ln.Addr().(*net.TCPAddr).Port
}

func basic(user, password string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+password))
}

// answer is what a client sees of the proxy's answer to its request head.
type answer struct {
	Status    int
	Challenge string
}

// tunnelConn is a client connection whose CONNECT the proxy answered.
type tunnelConn struct {
	net.Conn
	r *bufio.Reader
}

func (c tunnelConn) Read(p []byte) (int, error) { return c.r.Read(p) }

// connectThrough sends a CONNECT to target (with auth as the
// Proxy-Authorization header unless empty) and then payload, in one write,
// and returns the answer and the connection.
func connectThrough(t testing.TB, proxy, target, auth string, payload []byte) (answer, tunnelConn) {
	t.Helper()
	c, err := net.Dial("tcp", proxy)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	head := "CONNECT " + target + " HTTP/1.1\r\nHost: " + target + "\r\n"
	if auth != "" {
		head += "Proxy-Authorization: " + auth + "\r\n"
	}
	if _, err := c.Write(append([]byte(head+"\r\n"), payload...)); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil {
		t.Fatalf("reading the answer to CONNECT %s: %v", target, err)
	}
	if resp.StatusCode != http.StatusOK {
		io.Copy(io.Discard, resp.Body)
	}
	return answer{Status: resp.StatusCode, Challenge: resp.Header.Get("Proxy-Authenticate")}, tunnelConn{c, br}
}

// echoes writes msg through a tunnel to an echo server and reads it back.
func echoes(t testing.TB, c tunnelConn, msg string) error {
	t.Helper()
	c.SetDeadline(time.Now().Add(30 * time.Second))
	defer c.SetDeadline(time.Time{})
	if _, err := io.WriteString(c, msg); err != nil {
		return err
	}
	got := make([]byte, len(msg))
	if _, err := io.ReadFull(c, got); err != nil {
		return err
	}
	if string(got) != msg {
		return fmt.Errorf("the echo of %d bytes differs from what was sent", len(msg))
	}
	return nil
}

func hostPort(host string, port int) string { return net.JoinHostPort(host, strconv.Itoa(port)) }

// sourceHost compares access lines' SourceAddress by its host alone: the
// port is the kernel's pick.
var sourceHost = cmp.FilterPath(func(p cmp.Path) bool { return p.Last().String() == ".SourceAddress" },
	cmp.Transformer("host", func(s string) string {
		if h, _, err := net.SplitHostPort(s); err == nil {
			return h
		}
		return s
	}))
