package engine

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// rulesKey carries a request's rules to the dial of its upstream
// connection, so a request is dialled under the rules that authorised it.
type rulesKey struct{}

// forward carries a plain HTTP request (absolute-form, http://…) with
// net/http/httputil's ReverseProxy, which strips the hop-by-hop headers
// both ways: Proxy-Authorization, Proxy-Connection, Connection and the
// headers it lists, Keep-Alive, TE, Trailer, Transfer-Encoding, Upgrade.
func (s *Server) forward(w http.ResponseWriter, req *http.Request, r *rules, user string) {
	if req.URL.Scheme != "http" || req.URL.Host == "" {
		s.refuse(w, req, user, fmt.Errorf("%w: %s %q is not a proxy request (absolute http:// URL or CONNECT)", errBadRequest, req.Method, req.RequestURI))
		return
	}
	if _, _, err := r.target(req.URL.Host, 80); err != nil {
		s.refuse(w, req, user, err)
		return
	}
	ctx := context.WithValue(req.Context(), rulesKey{}, r)
	ctx = context.WithValue(ctx, userKey{}, user)
	if req.Body != nil && req.Body != http.NoBody {
		req.Body = countingBody{req.Body, &s.bytesIn}
	}
	s.forwarder.ServeHTTP(w, req.WithContext(ctx))
}

type userKey struct{}

func (s *Server) newForwarder() *httputil.ReverseProxy {
	return &httputil.ReverseProxy{
		// The outgoing request is the incoming one, hop-by-hop headers
		// gone; with Rewrite (not Director) no X-Forwarded-For is added, so
		// the destination does not learn the client's address.
		Rewrite:   func(*httputil.ProxyRequest) {},
		Transport: s.transport,
		ModifyResponse: func(resp *http.Response) error {
			resp.Body = countingBody{resp.Body, &s.bytesOut}
			return nil
		},
		BufferPool: bufferPool{},
		ErrorHandler: func(w http.ResponseWriter, req *http.Request, err error) {
			user, _ := req.Context().Value(userKey{}).(string)
			s.refuse(w, req, user, err)
		},
	}
}

// newTransport is the upstream side of plain HTTP: every connection made
// by Server.dial under the request's rules, no proxy of its own, no
// transparent decompression (the client gets the bytes the site sent).
func (s *Server) newTransport(responseHeaderTimeout time.Duration) *http.Transport {
	return &http.Transport{
		Proxy: nil,
		DialContext: func(ctx context.Context, _, addr string) (net.Conn, error) {
			r, _ := ctx.Value(rulesKey{}).(*rules)
			if r == nil {
				r = s.rules.Load()
			}
			host, portText, err := net.SplitHostPort(addr)
			if err != nil {
				return nil, err
			}
			port, err := strconv.Atoi(portText)
			if err != nil {
				return nil, err
			}
			return s.dial(ctx, r, host, port)
		},
		DisableCompression:    true,
		MaxIdleConnsPerHost:   4,
		IdleConnTimeout:       90 * time.Second,
		ResponseHeaderTimeout: responseHeaderTimeout,
	}
}

// countingBody counts the bytes read through a body.
type countingBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (b countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n.Add(int64(n))
	return n, err
}

// bufferPool lends ReverseProxy its copy buffers, 32 KiB each, instead of
// one new buffer per request.
type bufferPool struct{}

var buffers = sync.Pool{New: func() any { return new([32 << 10]byte) }}

func (bufferPool) Get() []byte  { return buffers.Get().(*[32 << 10]byte)[:] }
func (bufferPool) Put(b []byte) { buffers.Put((*[32 << 10]byte)(b)) }
