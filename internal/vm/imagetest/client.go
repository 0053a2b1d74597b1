package imagetest

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"time"
)

// DialFunc opens a connection, from wherever the client stands.
type DialFunc func(ctx context.Context, network, addr string) (net.Conn, error)

// ProxyClient speaks to the proxy as a user does, from a given source
// address, with or without credentials.
type ProxyClient struct {
	Dial  DialFunc
	Proxy string // host:port
	// User and Password go into Proxy-Authorization; no header when User
	// is empty.
	User, Password string
}

// Connect sends CONNECT target and returns the proxy's status code. On 200
// the tunnel is returned open; otherwise it is closed.
func (c ProxyClient) Connect(ctx context.Context, target string) (int, net.Conn, error) {
	resp, tunnel, err := c.ConnectAnswer(ctx, target)
	if err != nil {
		return 0, nil, err
	}
	return resp.StatusCode, tunnel, nil
}

// ConnectAnswer is Connect with the proxy's whole answer (its body closed).
func (c ProxyClient) ConnectAnswer(ctx context.Context, target string) (*http.Response, net.Conn, error) {
	conn, err := c.Dial(ctx, "tcp", c.Proxy)
	if err != nil {
		return nil, nil, err
	}
	if d, ok := ctx.Deadline(); ok {
		conn.SetDeadline(d)
	}
	req := &http.Request{Method: http.MethodConnect, URL: &url.URL{Opaque: target}, Host: target, Header: http.Header{}}
	c.authorize(req)
	if err := req.Write(conn); err != nil {
		conn.Close()
		return nil, nil, fmt.Errorf("CONNECT %s via %s: %w", target, c.Proxy, err)
	}
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, req)
	if err != nil {
		conn.Close()
		return nil, nil, fmt.Errorf("CONNECT %s via %s: reading the answer: %w", target, c.Proxy, err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		conn.Close()
		return resp, nil, nil
	}
	conn.SetDeadline(time.Time{})
	return resp, &bufferedConn{Conn: conn, r: br}, nil
}

// GetTLS tunnels to target and GETs path over TLS, trusting only roots and
// checking the certificate for serverName; it returns the body.
func (c ProxyClient) GetTLS(ctx context.Context, target, serverName string, roots *x509.CertPool, path string) (string, error) {
	status, tunnel, err := c.Connect(ctx, target)
	if err != nil {
		return "", err
	}
	if status != http.StatusOK {
		return "", fmt.Errorf("CONNECT %s via %s: status %d", target, c.Proxy, status)
	}
	defer tunnel.Close()
	return GetOverTunnel(ctx, tunnel, serverName, roots, path)
}

// GetOverTunnel GETs path over TLS through an open tunnel, trusting only
// roots and checking the certificate for serverName; it returns the body.
func GetOverTunnel(ctx context.Context, tunnel net.Conn, serverName string, roots *x509.CertPool, path string) (string, error) {
	target := serverName
	if d, ok := ctx.Deadline(); ok {
		tunnel.SetDeadline(d)
	}
	tc := tls.Client(tunnel, &tls.Config{RootCAs: roots, ServerName: serverName})
	if err := tc.HandshakeContext(ctx); err != nil {
		return "", fmt.Errorf("TLS to %s through the tunnel: %w", target, err)
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+serverName+path, nil)
	if err := req.Write(tc); err != nil {
		return "", fmt.Errorf("GET %s through the tunnel: %w", path, err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(tc), req)
	if err != nil {
		return "", fmt.Errorf("GET %s through the tunnel: %w", path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET %s through the tunnel: status %d", path, resp.StatusCode)
	}
	return string(body), err
}

// Get sends a plain proxied GET for an absolute http:// URL and returns the
// status and body.
func (c ProxyClient) Get(ctx context.Context, rawURL string, header http.Header) (int, string, error) {
	resp, body, err := c.GetAnswer(ctx, rawURL, header)
	if err != nil {
		return 0, "", err
	}
	return resp.StatusCode, body, nil
}

// GetAnswer is Get with the proxy's whole answer; the body (up to 1 MiB)
// is returned read.
func (c ProxyClient) GetAnswer(ctx context.Context, rawURL string, header http.Header) (*http.Response, string, error) {
	conn, err := c.Dial(ctx, "tcp", c.Proxy)
	if err != nil {
		return nil, "", err
	}
	defer conn.Close()
	if d, ok := ctx.Deadline(); ok {
		conn.SetDeadline(d)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		return nil, "", err
	}
	for k, v := range header {
		req.Header[k] = v
	}
	c.authorize(req)
	// WriteProxy sends the absolute URL in the request line, as a client
	// configured with a proxy does.
	if err := req.WriteProxy(conn); err != nil {
		return nil, "", fmt.Errorf("GET %s via %s: %w", rawURL, c.Proxy, err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), req)
	if err != nil {
		return nil, "", fmt.Errorf("GET %s via %s: reading the answer: %w", rawURL, c.Proxy, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp, string(body), err
}

func (c ProxyClient) authorize(req *http.Request) {
	if c.User == "" {
		return
	}
	req.Header.Set("Proxy-Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(c.User+":"+c.Password)))
}

// bufferedConn reads first what the proxy's answer left in the reader.
type bufferedConn struct {
	net.Conn
	r *bufio.Reader
}

func (b *bufferedConn) Read(p []byte) (int, error) { return b.r.Read(p) }
