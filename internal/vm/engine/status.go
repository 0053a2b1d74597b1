package engine

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"
	"strconv"
	"strings"

	"github.com/egress-proxies/egress/internal/vm/vmconfig"
)

// The status on the proxy port (vmconfig.StatusAccess): the control plane
// of a cloud whose VMs cannot call home reads a VM's status and access log
// through the proxy port, as a plain-HTTP request for the reserved host
// vmconfig.StatusHost, with the status credential. The engine answers it
// itself and carries nothing for that credential: the status user is not
// one of the proxy's users, so every proxy request with it is 407. A
// client from a status source that is not an allowed source gets the
// status and nothing else. Status requests make no access line and count
// in no counter: they are the control plane's, not a tenant's traffic.
//
// Each answer is signed with the VM's sign key (vmconfig.SignAnswer) over
// the request's nonce (vmconfig.StatusNonceHeader), its method and target
// and the body, in vmconfig.StatusSignatureHeader: the password travels
// in clear, so it proves nothing about who answers, and the control plane
// takes no answer without this signature. A request without a nonce is
// refused (status-nonce-missing): an answer signed over no nonce could be
// replayed.

// minSignKey is the least sign key the engine takes: 256 bits.
const minSignKey = 32

// statusAccess is vmconfig.StatusAccess compiled.
type statusAccess struct {
	name, hash string
	sources    []netip.Prefix
	signKey    []byte
}

func compileStatus(c *vmconfig.StatusAccess) (*statusAccess, error) {
	if c == nil {
		return nil, nil
	}
	u := c.User
	if u.Name == "" || strings.ContainsAny(u.Name, ":\r\n") {
		return nil, fmt.Errorf("engine: status.user: name %q is empty or holds ':' or a line break", u.Name)
	}
	if scheme, _, _ := strings.Cut(u.PasswordHash, ":"); scheme != vmconfig.HashScheme || strings.Count(u.PasswordHash, ":") != 2 {
		return nil, fmt.Errorf("engine: status.user (%s): passwordHash is not %s:SALT:DIGEST (HashPassword's form)", u.Name, vmconfig.HashScheme)
	}
	sources, err := prefixes("status.sources", c.Sources)
	if err != nil {
		return nil, err
	}
	key, err := base64.RawURLEncoding.DecodeString(c.SignKey)
	if err != nil || len(key) < minSignKey {
		return nil, fmt.Errorf("engine: status.signKey is not base64 (URL alphabet, unpadded) of at least %d bytes: the answers could not be signed", minSignKey)
	}
	return &statusAccess{name: u.Name, hash: u.PasswordHash, sources: sources, signKey: key}, nil
}

// statusSource reports whether a client at addr may ask for the status
// (and, unless it is an allowed source too, for nothing else).
func (r *rules) statusSource(addr netip.Addr) bool {
	return r.status != nil && contains(r.status.sources, addr.Unmap())
}

// isStatusRequest reports whether req asks the engine for its status:
// GET of an absolute http URL whose host is vmconfig.StatusHost.
func isStatusRequest(req *http.Request) bool {
	order := req.Method == http.MethodPut && req.URL.Path == vmconfig.TrafficPath
	if (req.Method != http.MethodGet && !order) || !strings.EqualFold(req.URL.Scheme, "http") {
		return false
	}
	host := req.URL.Hostname()
	return strings.EqualFold(host, vmconfig.StatusHost) && (req.URL.Port() == "" || req.URL.Port() == "80")
}

// serveStatus answers a status request and closes the connection: one
// question, one answer. Without a StatusAccess in the rules, the request
// is a proxy request like any other (and its name does not resolve).
func (s *Server) serveStatus(hc *httpConn, req *http.Request, r *rules) {
	cc := hc.cc
	switch {
	case !r.statusSource(cc.source) && !r.sourceAllowed(cc.source):
		hc.answer(ansSourceNotAllowed, true, nil)
		return
	case req.ContentLength != 0:
		hc.answer(ansBadBody, true, nil)
		return
	}
	name, password, ok := parseBasic(req.Header.Get("Proxy-Authorization"))
	if !ok || name != r.status.name || !vmconfig.Matches(r.status.hash, password) {
		a := ansCredentialsMissing
		if req.Header.Get("Proxy-Authorization") != "" {
			a = ansCredentialsWrong
			if !ok || name != r.status.name {
				// Hash anyway, so a wrong name costs what a wrong
				// password does.
				vmconfig.Matches(unknownUserHash, password)
			}
		}
		hc.answer(a, true, http.Header{"Proxy-Authenticate": {`Basic realm="` + Realm + `"`}})
		return
	}
	nonce := req.Header.Get(vmconfig.StatusNonceHeader)
	if !vmconfig.ValidStatusNonce(nonce) {
		hc.answer(ansStatusNonce, true, nil)
		return
	}
	var body any
	switch req.URL.Path {
	case vmconfig.TrafficPath:
		if req.Method != http.MethodPut {
			hc.answer(ansStatusNotFound, true, nil)
			return
		}
		if err := s.takeOrder(r, nonce, req); err != nil {
			s.log.Warn("traffic order refused", slog.Any("error", err))
			hc.answer(ansOrderRefused, true, nil)
			return
		}
		body = s.Status()
	case vmconfig.StatusPath:
		body = s.Status()
	case vmconfig.AccessPath:
		after, err := strconv.ParseInt(req.URL.Query().Get("after"), 10, 64)
		if err != nil && req.URL.Query().Get("after") != "" {
			hc.answer(ansBadTarget, true, nil)
			return
		}
		body = s.access.page(after)
	default:
		hc.answer(ansStatusNotFound, true, nil)
		return
	}
	var b bytes.Buffer
	json.NewEncoder(&b).Encode(body)
	sig := vmconfig.SignAnswer(r.status.signKey, nonce, req.Method, req.URL.RequestURI(), b.Bytes())
	w := hc.writer()
	w.WriteString("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nCache-Control: no-store\r\nConnection: close\r\n" +
		vmconfig.StatusSignatureHeader + ": " + sig + "\r\nContent-Length: " + strconv.Itoa(b.Len()) + "\r\n\r\n")
	w.Write(b.Bytes())
	w.Flush()
}

// Status is what the engine says of itself on the status request: the
// generation it serves, whether its agent proved it serves that one
// (Options.Readiness), why not, and the counters.
func (s *Server) Status() vmconfig.Status {
	st := vmconfig.Status{Stats: s.Stats()}
	st.Generation = st.Stats.Generation
	if s.readiness != nil {
		rd := s.readiness()
		st.Ready = rd.Ready && rd.Generation == st.Generation
		st.Error = rd.Error
		st.Instance, st.Zone, st.Egress = rd.Instance, rd.Zone, rd.Egress
	}
	return st
}
