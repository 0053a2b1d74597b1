package imagetest

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Hit is one request a host on the test's internet answered.
type Hit struct {
	Time       time.Time
	RemoteAddr string
	Method     string
	URI        string
}

// Host answers every request with a fixed body and records it, which is
// what a host on the internet needs to be for the proxy's tests: the body
// proves the answer came from it, the record shows from where it was asked.
// GET /bytes/N answers N bytes instead, traffic of a known size.
type Host struct {
	Body string

	mu   sync.Mutex
	hits []Hit
}

func (h *Host) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.mu.Lock()
	h.hits = append(h.hits, Hit{Time: time.Now(), RemoteAddr: r.RemoteAddr, Method: r.Method, URI: r.RequestURI})
	h.mu.Unlock()
	if n, err := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/bytes/")); err == nil && n >= 0 && n <= 1<<30 {
		w.Header().Set("Content-Length", strconv.Itoa(n))
		chunk := make([]byte, 64<<10)
		for n > 0 {
			k, err := w.Write(chunk[:min(n, len(chunk))])
			if err != nil {
				return
			}
			n -= k
		}
		return
	}
	io.WriteString(w, h.Body)
}

// Hits returns the requests so far.
func (h *Host) Hits() []Hit {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]Hit(nil), h.hits...)
}

// Sink is a port that accepts connections, records where they came from
// and closes them: a place the proxy must never connect to, where a
// connection that should have been refused leaves a trace.
type Sink struct {
	l    net.Listener
	mu   sync.Mutex
	from []string
}

// NewSink serves l until it is closed.
func NewSink(l net.Listener) *Sink {
	s := &Sink{l: l}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			s.mu.Lock()
			s.from = append(s.from, c.RemoteAddr().String())
			s.mu.Unlock()
			c.Close()
		}
	}()
	return s
}

// Addr is where the sink listens.
func (s *Sink) Addr() string { return s.l.Addr().String() }

// Accepted returns the sources of the connections accepted so far.
func (s *Sink) Accepted() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.from...)
}

// Close stops the sink.
func (s *Sink) Close() error { return s.l.Close() }

// Publish is one publish call the Pub/Sub stand-in received.
type Publish struct {
	Time          time.Time
	RemoteAddr    string
	Topic         string
	Authorization string
	// Data are the messages' payloads, decoded from base64.
	Data [][]byte
	// Attributes are the messages' attributes (the identity token).
	Attributes []map[string]string
	// Status is what the stand-in answered.
	Status int
}

// PubSub stands in for the Pub/Sub REST API's publish method
// (POST /v1/projects/P/topics/T:publish), the one call a proxy VM makes to
// call home. It accepts only the bearer token the metadata stand-in hands
// out, as the real API accepts only a token of a service account allowed
// to publish.
type PubSub struct {
	Token string

	mu        sync.Mutex
	publishes []Publish
}

func (p *PubSub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	pub := Publish{Time: time.Now(), RemoteAddr: r.RemoteAddr, Authorization: r.Header.Get("Authorization")}
	pub.Status = p.publish(r, &pub)
	p.mu.Lock()
	p.publishes = append(p.publishes, pub)
	n := len(p.publishes)
	p.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(pub.Status)
	if pub.Status == http.StatusOK {
		ids := make([]string, len(pub.Data))
		for i := range ids {
			ids[i] = fmt.Sprint(n*100 + i)
		}
		json.NewEncoder(w).Encode(map[string]any{"messageIds": ids})
		return
	}
	fmt.Fprintf(w, `{"error":{"code":%d,"message":%q}}`, pub.Status, http.StatusText(pub.Status))
}

func (p *PubSub) publish(r *http.Request, pub *Publish) int {
	topic, ok := strings.CutPrefix(r.URL.Path, "/v1/")
	if !ok || r.Method != http.MethodPost {
		return http.StatusNotFound
	}
	topic, ok = strings.CutSuffix(topic, ":publish")
	if !ok {
		return http.StatusNotFound
	}
	pub.Topic = topic
	if pub.Authorization != "Bearer "+p.Token {
		return http.StatusUnauthorized
	}
	var body struct {
		Messages []struct {
			Data       string            `json:"data"`
			Attributes map[string]string `json:"attributes"`
		} `json:"messages"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&body); err != nil || len(body.Messages) == 0 {
		return http.StatusBadRequest
	}
	for _, m := range body.Messages {
		data, err := base64.StdEncoding.DecodeString(m.Data)
		if err != nil {
			return http.StatusBadRequest
		}
		pub.Data = append(pub.Data, data)
		pub.Attributes = append(pub.Attributes, m.Attributes)
	}
	return http.StatusOK
}

// Publishes returns the publish calls so far.
func (p *PubSub) Publishes() []Publish {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]Publish(nil), p.publishes...)
}

// SourceHost answers each connection with the address it came from, one
// line, and closes it, recording the address: what a site sees of the
// proxy's source, from both ends.
type SourceHost struct {
	l    net.Listener
	mu   sync.Mutex
	from []netip.Addr
}

// NewSourceHost serves l until it is closed.
func NewSourceHost(l net.Listener) *SourceHost {
	s := &SourceHost{l: l}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			a := c.RemoteAddr().(*net.TCPAddr).AddrPort().Addr().Unmap()
			s.mu.Lock()
			s.from = append(s.from, a)
			s.mu.Unlock()
			c.SetWriteDeadline(time.Now().Add(10 * time.Second))
			io.WriteString(c, a.String()+"\n")
			c.Close()
		}
	}()
	return s
}

// Sources returns the addresses of the connections so far.
func (s *SourceHost) Sources() []netip.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]netip.Addr(nil), s.from...)
}

// Close stops the host.
func (s *SourceHost) Close() error { return s.l.Close() }
