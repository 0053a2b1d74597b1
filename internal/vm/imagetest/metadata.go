package imagetest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/egress-proxies/egress/internal/vmidentity"
	"unicode"

	"github.com/egress-proxies/egress/internal/vm/vmconfig"
)

// Metadata is a stand-in for the Compute Engine metadata server, enough of
// it for Google's guest agent, its script runner and the startup script:
// the instance's attributes (the metadata items of the insert request),
// a few fixed facts about the instance and project, a service account token
// for anyone who asks, and guest attributes that can be written, read and
// deleted. It answers as the real server does where a client depends on it:
// the Metadata-Flavor header is required and a request carrying
// X-Forwarded-For is refused (the real server's guard against proxies),
// recursive directories are JSON with camelCase names except for attribute
// keys, each path has an ETag of its content, and wait_for_change holds the
// request until that ETag moves (SetAttributes moves it).
//
// It records every request with its source, before any check, so that a
// test can see whether the proxy ever reached it.
type Metadata struct {
	// Token is the access token handed out for the default service account.
	Token string
	// Issuer signs the identity tokens handed out for the default service
	// account, as Google does for a real VM; a test verifies them with
	// vmidentity against its keys (Issuer.KeysClient).
	Issuer *vmidentity.Issuer
	inst   Instance

	mu       sync.Mutex
	instance map[string]any
	project  map[string]any
	guest    map[string]string // "namespace/key" → value
	guestLog []GuestWrite
	requests []Request
	changed  chan struct{} // closed and replaced on every guest write
	// edited is closed and replaced on every change of the instance's
	// attributes (SetAttributes): it wakes the waits for a change.
	edited chan struct{}
}

// Request is one request the stand-in received.
type Request struct {
	Time       time.Time
	RemoteAddr string
	Method     string
	URI        string
	Flavor     string
	Forwarded  string
}

// GuestWrite is one PUT or DELETE of a guest attribute.
type GuestWrite struct {
	Time   time.Time
	Method string
	Key    string // "namespace/key"
	Value  string
}

// Instance describes the VM to the stand-in.
type Instance struct {
	Project, Zone, Name, ID string
	ServiceAccount          string
	Attributes              map[string]string
}

// NewMetadata returns a stand-in for one instance.
func NewMetadata(inst Instance, token string) *Metadata {
	attrs := attributes{}
	for k, v := range inst.Attributes {
		attrs[k] = v
	}
	iss, err := vmidentity.NewIssuer()
	if err != nil {
		panic(err) // crypto/rand failed: nothing works
	}
	return &Metadata{
		Token:  token,
		Issuer: iss,
		inst:   inst,
		instance: map[string]any{
			"attributes":   attrs,
			"hostname":     inst.Name + "." + inst.Zone + ".c." + inst.Project + ".internal",
			"id":           inst.ID,
			"name":         inst.Name,
			"zone":         "projects/" + inst.Project + "/zones/" + inst.Zone,
			"machine-type": "projects/" + inst.Project + "/machineTypes/e2-small",
			"service-accounts": map[string]any{
				"default": map[string]any{
					"email":   inst.ServiceAccount,
					"aliases": "default",
					"scopes":  "https://www.googleapis.com/auth/pubsub",
				},
			},
		},
		project: map[string]any{
			"project-id":         inst.Project,
			"numeric-project-id": "123456789012",
			"attributes":         attributes{},
		},
		guest:   map[string]string{},
		changed: make(chan struct{}),
		edited:  make(chan struct{}),
	}
}

// SetAttributes changes instance attributes in one step, as one
// instances.setMetadata does: each key is set to its value, or removed
// when the value is "". A request waiting for a change of a value that
// changed answers now.
func (m *Metadata) SetAttributes(changes map[string]string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	attrs := m.instance["attributes"].(attributes)
	for k, v := range changes {
		if v == "" {
			delete(attrs, k)
		} else {
			attrs[k] = v
		}
	}
	close(m.edited)
	m.edited = make(chan struct{})
}

// attributes is a directory whose keys are the user's, kept as they are in
// recursive JSON (the real server camel-cases only its own names).
type attributes map[string]string

// Requests returns every request received so far.
func (m *Metadata) Requests() []Request {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]Request(nil), m.requests...)
}

// Attributes returns the instance's metadata items.
func (m *Metadata) Attributes() map[string]string {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[string]string{}
	for k, v := range m.instance["attributes"].(attributes) {
		out[k] = v
	}
	return out
}

// GuestAttributes returns the guest attributes as they stand, by
// "namespace/key".
func (m *Metadata) GuestAttributes() map[string]string {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[string]string, len(m.guest))
	for k, v := range m.guest {
		out[k] = v
	}
	return out
}

// GuestLog returns every guest attribute write so far.
func (m *Metadata) GuestLog() []GuestWrite {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]GuestWrite(nil), m.guestLog...)
}

// WaitGuest waits until one of keys is PUT after since, and returns that
// write. Guest attributes outlive a reboot, as on Compute Engine, so a
// second boot is told apart by the time of its write, not by its presence.
func (m *Metadata) WaitGuest(ctx context.Context, since time.Time, keys ...string) (GuestWrite, error) {
	for {
		m.mu.Lock()
		for _, w := range m.guestLog {
			if w.Method == http.MethodPut && !w.Time.Before(since) && contains(keys, w.Key) {
				m.mu.Unlock()
				return w, nil
			}
		}
		ch := m.changed
		m.mu.Unlock()
		select {
		case <-ctx.Done():
			return GuestWrite{}, ctx.Err()
		case <-ch:
		}
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

const apiPrefix = "/computeMetadata/v1/"

func (m *Metadata) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	m.mu.Lock()
	m.requests = append(m.requests, Request{Time: time.Now(), RemoteAddr: r.RemoteAddr, Method: r.Method,
		URI: r.RequestURI, Flavor: r.Header.Get("Metadata-Flavor"), Forwarded: r.Header.Get("X-Forwarded-For")})
	m.mu.Unlock()

	w.Header().Set("Metadata-Flavor", "Google")
	w.Header().Set("Server", "Metadata Server for VM")
	if r.URL.Path == "/" {
		// What a client's "am I on GCE?" check reads; no header needed.
		io.WriteString(w, "computeMetadata/\n")
		return
	}
	if r.Header.Get("X-Forwarded-For") != "" {
		http.Error(w, "Request had an X-Forwarded-For header and was rejected.", http.StatusForbidden)
		return
	}
	if r.Header.Get("Metadata-Flavor") != "Google" {
		http.Error(w, "Missing required header \"Metadata-Flavor\": \"Google\"", http.StatusForbidden)
		return
	}
	path, ok := strings.CutPrefix(r.URL.Path, apiPrefix)
	if !ok {
		http.NotFound(w, r)
		return
	}
	switch {
	case strings.HasPrefix(path, "instance/guest-attributes/"):
		m.serveGuest(w, r, strings.TrimPrefix(path, "instance/guest-attributes/"))
	case strings.HasPrefix(path, "instance/service-accounts/") && strings.HasSuffix(path, "/identity"):
		// As the real server: an audience is required; format=full adds
		// the instance's claims, which a call-home needs.
		aud := r.URL.Query().Get("audience")
		if aud == "" {
			http.Error(w, "non-empty audience parameter required", http.StatusBadRequest)
			return
		}
		in := vmidentity.Instance{Project: m.inst.Project, Zone: m.inst.Zone, Name: m.inst.Name, ID: m.inst.ID, Email: m.inst.ServiceAccount}
		if r.URL.Query().Get("format") != "full" {
			in = vmidentity.Instance{Email: m.inst.ServiceAccount}
		}
		tok, err := m.Issuer.Token(aud, in, time.Now())
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		io.WriteString(w, tok)
	case strings.HasPrefix(path, "instance/service-accounts/") && strings.HasSuffix(path, "/token"):
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"access_token": m.Token, "expires_in": 3599, "token_type": "Bearer"})
	case r.Method != http.MethodGet:
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	default:
		m.serveTree(w, r, path)
	}
}

// serveGuest answers guest-attributes/NAMESPACE/KEY.
func (m *Metadata) serveGuest(w http.ResponseWriter, r *http.Request, key string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	attrs := m.instance["attributes"].(attributes)
	if !strings.EqualFold(attrs[vmconfig.KeyGuestAttributes], "true") {
		// The real server serves guest attributes only to an instance
		// whose metadata enables them.
		http.Error(w, "Guest attributes endpoint access is disabled.", http.StatusForbidden)
		return
	}
	switch r.Method {
	case http.MethodPut:
		body, _ := io.ReadAll(io.LimitReader(r.Body, 64<<10))
		if strings.Count(key, "/") != 1 || strings.HasSuffix(key, "/") {
			http.Error(w, "guest attribute keys are NAMESPACE/KEY", http.StatusBadRequest)
			return
		}
		m.guest[key] = string(body)
		m.note(GuestWrite{Time: time.Now(), Method: r.Method, Key: key, Value: string(body)})
	case http.MethodDelete:
		delete(m.guest, key)
		m.note(GuestWrite{Time: time.Now(), Method: r.Method, Key: key})
	case http.MethodGet:
		v, ok := m.guest[key]
		if !ok {
			http.NotFound(w, r)
			return
		}
		io.WriteString(w, v)
	default:
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	}
}

// note records a guest write and wakes WaitGuest. Called with m.mu held.
func (m *Metadata) note(gw GuestWrite) {
	m.guestLog = append(m.guestLog, gw)
	close(m.changed)
	m.changed = make(chan struct{})
}

// serveTree answers a path of the tree: a leaf as text (or a JSON string
// with alt=json), a directory as a listing, or as JSON with
// recursive=true. Its ETag is a hash of the content at that path, as the
// real server's: a watcher of one attribute is woken by a change of that
// attribute only. With wait_for_change=true the answer waits until the
// ETag differs from last_etag (without last_etag: from the ETag now, i.e.
// until the next change) or timeout_sec passes (then it is the value as it
// stands); a last_etag that is no longer the ETag answers at once.
func (m *Metadata) serveTree(w http.ResponseWriter, r *http.Request, path string) {
	q := r.URL.Query()
	a := m.lookup(path, q)
	if q.Get("wait_for_change") == "true" {
		last := q.Get("last_etag")
		if last == "" {
			last = a.etag
		}
		timeout := 60 * time.Second
		if s, err := strconv.Atoi(q.Get("timeout_sec")); err == nil && s > 0 {
			timeout = time.Duration(s) * time.Second
		}
		expired := time.After(timeout)
	wait:
		for a.etag == last {
			m.mu.Lock()
			edited := m.edited
			m.mu.Unlock()
			// Looked up again after the channel was read: a change in
			// between shows here, or closes that channel.
			if a = m.lookup(path, q); a.etag != last {
				break
			}
			select {
			case <-r.Context().Done():
				return
			case <-expired:
				break wait
			case <-edited:
			}
			a = m.lookup(path, q)
		}
	}
	if !a.found {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("ETag", a.etag)
	w.Header().Set("Content-Type", a.contentType)
	io.WriteString(w, a.body)
}

// answer is a path's answer, rendered under the lock.
type answer struct {
	found             bool
	body, contentType string
	etag              string
}

// lookup renders the node at path as the query asks, with its ETag, a
// hash of its content.
func (m *Metadata) lookup(path string, q url.Values) answer {
	m.mu.Lock()
	defer m.mu.Unlock()
	var node any = map[string]any{"instance": m.instance, "project": m.project}
	for _, part := range strings.Split(strings.Trim(path, "/"), "/") {
		if part == "" || node == nil {
			continue
		}
		switch dir := node.(type) {
		case map[string]any:
			node = dir[part]
		case attributes:
			v, ok := dir[part]
			node = v
			if !ok {
				node = nil
			}
		default:
			node = nil
		}
	}
	sum := sha256.Sum256([]byte(encode(map[string]any{"": node}, false)))
	a := answer{found: node != nil, etag: hex.EncodeToString(sum[:8])}
	leaf, isLeaf := node.(string)
	switch {
	case isLeaf && q.Get("alt") == "json":
		b, _ := json.Marshal(leaf)
		a.body, a.contentType = string(b)+"\n", "application/json"
	case isLeaf:
		a.body, a.contentType = leaf, "application/text"
	case q.Get("recursive") == "true":
		a.body, a.contentType = encode(node, true), "application/json"
	default:
		a.body, a.contentType = listing(node), "application/text"
	}
	return a
}

// encode renders a directory as the real server's recursive JSON.
func encode(node any, camel bool) string {
	var conv func(any) any
	conv = func(n any) any {
		switch d := n.(type) {
		case attributes:
			return map[string]string(d)
		case map[string]any:
			out := map[string]any{}
			for k, v := range d {
				if camel {
					k = camelCase(k)
				}
				out[k] = conv(v)
			}
			return out
		default:
			return n
		}
	}
	b, _ := json.Marshal(conv(node))
	return string(b)
}

// listing is a directory's entries, one a line, with "/" after a directory.
func listing(node any) string {
	var names []string
	switch d := node.(type) {
	case attributes:
		for k := range d {
			names = append(names, k)
		}
	case map[string]any:
		for k, v := range d {
			if _, leaf := v.(string); !leaf {
				k += "/"
			}
			names = append(names, k)
		}
	}
	sort.Strings(names)
	return strings.Join(names, "\n") + "\n"
}

func camelCase(s string) string {
	parts := strings.Split(s, "-")
	for i := 1; i < len(parts); i++ {
		if p := []rune(parts[i]); len(p) > 0 {
			p[0] = unicode.ToUpper(p[0])
			parts[i] = string(p)
		}
	}
	return strings.Join(parts, "")
}
