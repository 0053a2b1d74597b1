// Package loadtest measures a forward proxy from outside, the same way
// whatever the proxy is (this project's engine, tinyproxy, squid): the
// throughput of one download through a tunnel (HTTP CONNECT or SOCKS5)
// against the direct path in the same run, read 1 MiB at a time, the time
// of a request on a new connection, how many concurrent tunnels the proxy
// holds, and its resident memory. It is the one harness of the engine's
// benchmark, dev/proxy-bench and make image-bench
// (internal/vm/imagetest); it serves its own targets (a byte source and
// an echo) on any address or listener it is given.
package loadtest

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
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Proxy is how to reach the proxy under test.
type Proxy struct {
	// Addr is its host:port.
	Addr string
	// User and Password are its credentials (Basic, or SOCKS5's
	// username/password); empty sends none.
	User, Password string
	// Socks5 asks for tunnels with SOCKS5 (RFC 1928, the CONNECT command)
	// instead of HTTP CONNECT.
	Socks5 bool
	// Dial opens the connection to the proxy, from wherever the client
	// stands (a network namespace of the image test's); nil dials from
	// here.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
}

// connect opens a connection to the proxy and a tunnel through it to
// target, returning the connection ready to carry bytes.
func (p Proxy) connect(ctx context.Context, target string) (net.Conn, error) {
	dial := p.Dial
	if dial == nil {
		var d net.Dialer
		dial = d.DialContext
	}
	c, err := dial(ctx, "tcp", p.Addr)
	if err != nil {
		return nil, err
	}
	if dl, ok := ctx.Deadline(); ok {
		c.SetDeadline(dl)
	}
	if p.Socks5 {
		if err := Socks5Connect(c, p.User, p.Password, target); err != nil {
			c.Close()
			return nil, err
		}
		c.SetDeadline(time.Time{})
		return c, nil
	}
	head := "CONNECT " + target + " HTTP/1.1\r\nHost: " + target + "\r\n"
	if p.User != "" {
		head += "Proxy-Authorization: Basic " + base64.StdEncoding.EncodeToString([]byte(p.User+":"+p.Password)) + "\r\n"
	}
	if _, err := io.WriteString(c, head+"\r\n"); err != nil {
		c.Close()
		return nil, err
	}
	// Read the answer byte by byte up to its blank line, so no byte of the
	// tunnel is left in a buffer.
	var line []byte
	one := make([]byte, 1)
	for !strings.HasSuffix(string(line), "\r\n\r\n") {
		if _, err := c.Read(one); err != nil {
			c.Close()
			return nil, fmt.Errorf("reading the answer to CONNECT %s: %w", target, err)
		}
		line = append(line, one[0])
		if len(line) > 16<<10 {
			c.Close()
			return nil, errors.New("the answer to CONNECT has no end")
		}
	}
	resp, err := http.ReadResponse(bufio.NewReader(strings.NewReader(string(line))), &http.Request{Method: http.MethodConnect})
	if err != nil {
		c.Close()
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		c.Close()
		return nil, fmt.Errorf("CONNECT %s: %s", target, resp.Status)
	}
	c.SetDeadline(time.Time{})
	return c, nil
}

// Targets are the servers a measurement reaches: Source sends bytes until
// the client closes, Echo sends back what it gets.
type Targets struct {
	Source, Echo string
	lns          []net.Listener
}

// Serve starts the targets on host, on the ports given (0: chosen by the
// kernel).
func Serve(host string, sourcePort, echoPort int) (*Targets, error) {
	src, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(sourcePort)))
	if err != nil {
		return nil, err
	}
	echo, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(echoPort)))
	if err != nil {
		src.Close()
		return nil, err
	}
	return ServeListeners(src, echo), nil
}

// ServeListeners serves the targets on listeners the caller made (in a
// network namespace of the image test's, say).
func ServeListeners(src, echo net.Listener) *Targets {
	t := &Targets{lns: []net.Listener{src, echo}}
	t.Source, t.Echo = src.Addr().String(), echo.Addr().String()
	go accept(src, func(c net.Conn) {
		buf := make([]byte, 256<<10)
		for {
			if _, err := c.Write(buf); err != nil {
				return
			}
		}
	})
	go accept(echo, func(c net.Conn) { io.Copy(c, c) })
	return t
}

// Close stops the targets.
func (t *Targets) Close() {
	for _, l := range t.lns {
		l.Close()
	}
}

func accept(ln net.Listener, serve func(net.Conn)) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			serve(c)
		}()
	}
}

// Connect opens a tunnel to target through the proxy.
func (p Proxy) Connect(ctx context.Context, target string) (net.Conn, error) {
	return p.connect(ctx, target)
}

// reach connects to target through the proxy, or directly if p is nil
// or has no Addr (a Proxy with only Dial is the direct path from where
// Dial stands).
func reach(ctx context.Context, p *Proxy, target string) (net.Conn, error) {
	if p != nil && p.Addr != "" {
		return p.connect(ctx, target)
	}
	if p != nil && p.Dial != nil {
		return p.Dial(ctx, "tcp", target)
	}
	var d net.Dialer
	return d.DialContext(ctx, "tcp", target)
}

// SocksError is a SOCKS5 proxy's refusal: the stage (method,
// authentication or request) and the code it answered.
type SocksError struct {
	Stage string
	Code  byte
}

func (e *SocksError) Error() string {
	return fmt.Sprintf("socks5 %s refused: code %d", e.Stage, e.Code)
}

// Socks5Connect runs a SOCKS5 client's handshake on c (RFC 1928, with
// RFC 1929 username and password when user is set) for a CONNECT to
// target, host:port, the host sent as a name unless it is an address.
// It reads exactly the handshake's bytes, so c then carries the tunnel.
func Socks5Connect(c net.Conn, user, password, target string) error {
	host, portText, err := net.SplitHostPort(target)
	if err != nil {
		return err
	}
	port, err := strconv.Atoi(portText)
	if err != nil {
		return err
	}
	method := byte(0x00)
	if user != "" {
		method = 0x02
	}
	if _, err := c.Write([]byte{5, 1, method}); err != nil {
		return err
	}
	var b [2]byte
	if _, err := io.ReadFull(c, b[:]); err != nil {
		return fmt.Errorf("socks5 method selection: %w", err)
	}
	if b[1] != method {
		return &SocksError{Stage: "method", Code: b[1]}
	}
	if user != "" {
		auth := append([]byte{1, byte(len(user))}, user...)
		auth = append(append(auth, byte(len(password))), password...)
		if _, err := c.Write(auth); err != nil {
			return err
		}
		if _, err := io.ReadFull(c, b[:]); err != nil {
			return fmt.Errorf("socks5 authentication: %w", err)
		}
		if b[1] != 0 {
			return &SocksError{Stage: "authentication", Code: b[1]}
		}
	}
	req := []byte{5, 1, 0}
	if a, err := netip.ParseAddr(host); err == nil && a.Zone() == "" && a.Is4() {
		req = append(append(req, 1), a.AsSlice()...)
	} else if err == nil && a.Zone() == "" {
		req = append(append(req, 4), a.AsSlice()...)
	} else {
		req = append(append(req, 3, byte(len(host))), host...)
	}
	req = append(req, byte(port>>8), byte(port))
	if _, err := c.Write(req); err != nil {
		return err
	}
	var rep [4]byte
	if _, err := io.ReadFull(c, rep[:]); err != nil {
		return fmt.Errorf("socks5 reply: %w", err)
	}
	n := 4
	switch rep[3] {
	case 4:
		n = 16
	case 3:
		var l [1]byte
		if _, err := io.ReadFull(c, l[:]); err != nil {
			return err
		}
		n = int(l[0])
	}
	if _, err := io.ReadFull(c, make([]byte, n+2)); err != nil {
		return fmt.Errorf("socks5 reply: %w", err)
	}
	if rep[1] != 0 {
		return &SocksError{Stage: "request", Code: rep[1]}
	}
	return nil
}

// Download reads n bytes from the source, through the proxy if p is not
// nil, directly otherwise, in reads of 1 MiB, and returns MB/s (10^6
// bytes a second). The engine's benchmark and make image-bench both
// measure with it.
func Download(ctx context.Context, p *Proxy, source string, n int64) (float64, error) {
	start := time.Now()
	c, err := reach(ctx, p, source)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	if dl, ok := ctx.Deadline(); ok {
		c.SetDeadline(dl)
	}
	// Read in large pieces, so the client is not what limits the rate
	// (io.Discard's own ReadFrom reads 8 KiB at a time).
	got, err := io.CopyBuffer(struct{ io.Writer }{io.Discard}, io.LimitReader(c, n), make([]byte, 1<<20))
	if err == nil && got < n {
		err = io.ErrUnexpectedEOF
	}
	if err != nil {
		return 0, fmt.Errorf("after %d of %d bytes: %w", got, n, err)
	}
	return float64(n) / time.Since(start).Seconds() / 1e6, nil
}

// Latency is the time of a request on a new connection: connect (and
// CONNECT through the proxy), send a line to the echo and read it back.
func Latency(ctx context.Context, p *Proxy, echo string) (time.Duration, error) {
	start := time.Now()
	c, err := reach(ctx, p, echo)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	if err := echoOnce(c, "ping\n"); err != nil {
		return 0, err
	}
	return time.Since(start), nil
}

// echoBound bounds one echo through a tunnel Tunnels holds: a proxy
// that stops carrying a tunnel fails the measurement instead of hanging
// it (one such run waited ten minutes for a byte).
const echoBound = 30 * time.Second

// echoWithin is echoOnce within d, leaving c without a deadline after.
func echoWithin(c net.Conn, msg string, d time.Duration) error {
	c.SetDeadline(time.Now().Add(d))
	defer c.SetDeadline(time.Time{})
	return echoOnce(c, msg)
}

func echoOnce(c net.Conn, msg string) error {
	if _, err := io.WriteString(c, msg); err != nil {
		return err
	}
	buf := make([]byte, len(msg))
	if _, err := io.ReadFull(c, buf); err != nil {
		return err
	}
	if string(buf) != msg {
		return errors.New("the echo differs")
	}
	return nil
}

// Percentiles returns the p50 and p99 of ds in milliseconds.
func Percentiles(ds []time.Duration) (p50, p99 float64) {
	if len(ds) == 0 {
		return 0, 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	at := func(q float64) float64 {
		return float64(s[min(len(s)-1, int(q*float64(len(s))))].Microseconds()) / 1000
	}
	return at(0.50), at(0.99)
}

// Tunnels opens n tunnels to the echo through the proxy, with up to 64
// opening at once, and keeps them open: each proves itself with one echo.
// It returns the open ones (the caller closes them) and the first error
// of those that failed. atOpen, if set, is called when k tunnels are open
// for each k in marks, with the tunnels still open.
func Tunnels(ctx context.Context, p Proxy, echo string, n int, marks []int, atOpen func(k int)) ([]net.Conn, error) {
	var (
		mu       sync.Mutex
		open     []net.Conn
		firstErr error
	)
	sem := make(chan struct{}, 64)
	var wg sync.WaitGroup
	for range n {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			// A proxy that queues a tunnel it cannot take gets a bound.
			cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			c, err := p.connect(cctx, echo)
			if err == nil {
				if err = echoWithin(c, "x", echoBound); err != nil {
					c.Close()
				}
			}
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				if firstErr == nil {
					firstErr = err
				}
				return
			}
			open = append(open, c)
			if atOpen != nil && slices.Contains(marks, len(open)) {
				atOpen(len(open))
			}
		})
	}
	wg.Wait()
	// A tunnel that was cut while others opened is not held.
	held := open[:0]
	for _, c := range open {
		if err := echoWithin(c, "y", echoBound); err != nil {
			c.Close()
			if firstErr == nil {
				firstErr = fmt.Errorf("a tunnel open earlier no longer echoes: %w", err)
			}
			continue
		}
		held = append(held, c)
	}
	return held, firstErr
}

// RSSMiB reads a process's resident memory from /proc/PID/status (VmRSS),
// in MiB; pid 0 is this process.
func RSSMiB(pid int) (float64, error) {
	path := "/proc/self/status"
	if pid != 0 {
		path = "/proc/" + strconv.Itoa(pid) + "/status"
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	for line := range strings.Lines(string(b)) {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(rest), " kB"))
			if err != nil {
				return 0, fmt.Errorf("%s: VmRSS %q: %w", path, rest, err)
			}
			return float64(kb) / 1024, nil
		}
	}
	return 0, fmt.Errorf("%s has no VmRSS", path)
}
