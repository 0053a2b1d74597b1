// Package loadtest measures a forward proxy from outside, the same way
// whatever the proxy is (this project's engine, tinyproxy, squid): the
// throughput of one download through a CONNECT tunnel against the direct
// path in the same run, the time of a request on a new connection, how
// many concurrent tunnels the proxy holds, and its resident memory. The
// engine's benchmark and cmd/proxy-bench use it; it serves its own
// targets (a byte source and an echo) on any address it is given.
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
	// User and Password are its Basic credentials; empty sends none.
	User, Password string
}

// connect opens a connection to the proxy and a CONNECT tunnel through it
// to target, returning the connection ready to carry bytes.
func (p Proxy) connect(ctx context.Context, target string) (net.Conn, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", p.Addr)
	if err != nil {
		return nil, err
	}
	if dl, ok := ctx.Deadline(); ok {
		c.SetDeadline(dl)
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
	t := &Targets{}
	src, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(sourcePort)))
	if err != nil {
		return nil, err
	}
	echo, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(echoPort)))
	if err != nil {
		src.Close()
		return nil, err
	}
	t.lns = []net.Listener{src, echo}
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
	return t, nil
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

// reach connects to target through the proxy, or directly if p is nil.
func reach(ctx context.Context, p *Proxy, target string) (net.Conn, error) {
	if p != nil {
		return p.connect(ctx, target)
	}
	var d net.Dialer
	return d.DialContext(ctx, "tcp", target)
}

// Download reads n bytes from the source, through the proxy if p is not
// nil, directly otherwise, and returns MB/s (10^6 bytes a second).
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
				if err = echoOnce(c, "x"); err != nil {
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
		if err := echoOnce(c, "y"); err != nil {
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
