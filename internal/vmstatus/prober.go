package vmstatus

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/vm/vmconfig"
)

// Status is what a VM's proxy says of itself, as a provider reads it.
type Status struct {
	// Generation is the generation of the engine configuration it serves.
	Generation int64
	// Ready says its self-test passed: it serves Generation.
	Ready bool
	// Error, when it is not ready, is why (its bootstrap's reason).
	Error string
	// Traffic is what it carried since its engine started.
	Traffic *provider.Traffic
	// Instance and Zone are which VM answered, as its cloud's metadata
	// service told its agent (EC2's); empty where the VM reads none.
	Instance, Zone string
	// Egress is the address its outbound traffic leaves from, as its
	// agent says, when that is not its own (a DigitalOcean Droplet's
	// reserved IP); empty otherwise.
	Egress string
	// TrafficStop is the stop at its namespace's budget it serves now;
	// nil when none holds.
	TrafficStop *vmconfig.TrafficStop
}

// DefaultTimeout bounds one status request: a VM that does not answer in
// that time is still booting, as far as the caller can tell.
const DefaultTimeout = 5 * time.Second

// Prober asks VMs for their status through their proxy port, with the
// status credential derived from the key.
type Prober struct {
	// Key returns the key (read from Secret Manager on first use, in
	// production); an error is returned by each call that needs it.
	Key func(ctx context.Context) (Key, error)
	// Timeout bounds one request; zero is DefaultTimeout.
	Timeout time.Duration
	// Now stamps the traffic's report time; nil is time.Now.
	Now func() time.Time
	// Dial opens the TCP connection to the VM; nil is a net.Dialer's.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
}

// Probe asks the proxy at ip:port, the VM of the proxy uid with status id
// id (its label, StatusID), for its status. An error means no answer it
// could read (the VM still boots, its engine does not listen yet, the
// answer is not a status, or it is not signed with that VM's sign key:
// ErrUnsigned): the caller takes it for Provisioning. An answer is the
// Status.
func (p *Prober) Probe(ctx context.Context, ip string, port int32, uid, id string) (Status, error) {
	var st vmconfig.Status
	if err := p.get(ctx, ip, port, uid, id, vmconfig.StatusPath, &st); err != nil {
		return Status{}, err
	}
	now := time.Now
	if p.Now != nil {
		now = p.Now
	}
	return Status{Generation: st.Generation, Ready: st.Ready, Error: st.Error, Instance: st.Instance, Zone: st.Zone, Egress: st.Egress,
		TrafficStop: st.Stats.TrafficStop, Traffic: &provider.Traffic{BytesIn: st.Stats.BytesIn, BytesOut: st.Stats.BytesOut, Connections: st.Stats.Connections, ReportTime: now(),
			Month: st.Stats.Month, MonthBytes: st.Stats.MonthBytes}}, nil
}

// Access reads the VM's access log after the line after (0 from the
// first it holds): the lines, the number to ask after next time, and how
// many it let go unread (vmconfig.AccessPage). It is the pull that takes
// a GCE VM's call-home's place for the access lines of these VMs. A page
// not signed with the VM's sign key is refused as Probe refuses a status.
func (p *Prober) Access(ctx context.Context, ip string, port int32, uid, id string, after int64) (vmconfig.AccessPage, error) {
	var page vmconfig.AccessPage
	err := p.get(ctx, ip, port, uid, id, vmconfig.AccessPath+"?after="+strconv.FormatInt(after, 10), &page)
	return page, err
}

// ErrUnsigned is wrapped by the error of an answer refused for its
// signature: none, or not the VM's over this request's nonce.
var ErrUnsigned = errors.New("the answer is not signed with the VM's status sign key over this request's nonce")

// get sends GET http://egress-status.invalid/PATH to the proxy at
// ip:port, as a client of the proxy (the absolute form, Proxy-Authorization
// with the VM's status credential, a fresh nonce), checks the answer's
// signature and reads its JSON answer into out.
func (p *Prober) get(ctx context.Context, ip string, port int32, uid, id, path string, out any) error {
	return p.ask(ctx, http.MethodGet, ip, port, uid, id, path, nil, out)
}

// StopTraffic tells the proxy at ip:port, the VM of the proxy uid with
// status id id, to serve stop (nil: carry again) from now on: PUT
// http://egress-status.invalid/traffic with the order signed by the VM's
// sign key (vmconfig.SignOrder), which is what the engine takes it for
// the control plane's by. The answer is the VM's Status after the order,
// signed as a status is; an error is an order not known to be taken.
func (p *Prober) StopTraffic(ctx context.Context, ip string, port int32, uid, id string, stop *vmconfig.TrafficStop) (Status, error) {
	now := time.Now
	if p.Now != nil {
		now = p.Now
	}
	raw, err := json.Marshal(vmconfig.TrafficOrder{Stop: stop, Issued: now().UTC()})
	if err != nil {
		return Status{}, fmt.Errorf("vmstatus: the traffic order: %w", err)
	}
	order := base64.RawURLEncoding.EncodeToString(raw)
	sign := func(key Key, nonce string) http.Header {
		return http.Header{vmconfig.TrafficOrderHeader: {order},
			vmconfig.TrafficOrderSignatureHeader: {vmconfig.SignOrder(key.SignKey(uid, id), nonce, http.MethodPut, vmconfig.TrafficPath, order)}}
	}
	var st vmconfig.Status
	if err := p.ask(ctx, http.MethodPut, ip, port, uid, id, vmconfig.TrafficPath, sign, &st); err != nil {
		return Status{}, err
	}
	if stop != nil && (st.Stats.TrafficStop == nil || st.Stats.TrafficStop.Month != stop.Month) && st.Stats.Month == stop.Month {
		return Status{}, fmt.Errorf("vmstatus: %s took the traffic order but serves stop %+v, not %+v", ip, st.Stats.TrafficStop, *stop)
	}
	return Status{Generation: st.Generation, Ready: st.Ready, Error: st.Error, Instance: st.Instance, Zone: st.Zone, Egress: st.Egress,
		TrafficStop: st.Stats.TrafficStop}, nil
}

// ask sends METHOD http://egress-status.invalid/PATH to the proxy at
// ip:port with the headers headers makes for the request's key and
// nonce (nil: none), as get does.
func (p *Prober) ask(ctx context.Context, method, ip string, port int32, uid, id, path string, headers func(key Key, nonce string) http.Header, out any) error {
	if p.Key == nil {
		return fmt.Errorf("vmstatus: no status key")
	}
	if net.ParseIP(ip) == nil || port < 1 || port > 65535 {
		return fmt.Errorf("vmstatus: %q port %d is not an address to ask", ip, port)
	}
	if err := CheckStatusID(id); err != nil {
		// Nothing is sent: no credential of the proxy goes to a VM
		// that could not check it.
		return fmt.Errorf("vmstatus: %s (uid %s): %w", net.JoinHostPort(ip, strconv.Itoa(int(port))), uid, err)
	}
	key, err := p.Key(ctx)
	if err != nil {
		return fmt.Errorf("vmstatus: the status key: %w", err)
	}
	var n [16]byte
	if _, err := rand.Read(n[:]); err != nil {
		return fmt.Errorf("vmstatus: drawing a nonce: %w", err)
	}
	nonce := base64.RawURLEncoding.EncodeToString(n[:])
	timeout := p.Timeout
	if timeout == 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	proxyURL := &url.URL{Scheme: "http", User: url.UserPassword(User, key.Password(uid, id)), Host: net.JoinHostPort(ip, strconv.Itoa(int(port)))}
	dial := p.Dial
	if dial == nil {
		dial = (&net.Dialer{}).DialContext
	}
	// One connection per question, never reused: the engine closes it
	// after its answer, and no pool outlives the call.
	tr := &http.Transport{Proxy: http.ProxyURL(proxyURL), DialContext: dial, DisableKeepAlives: true, ResponseHeaderTimeout: timeout}
	defer tr.CloseIdleConnections()
	req, err := http.NewRequestWithContext(ctx, method, "http://"+vmconfig.StatusHost+path, nil)
	if err != nil {
		return err
	}
	if headers != nil {
		for k, v := range headers(key, nonce) {
			req.Header[k] = v
		}
	}
	req.Header.Set(vmconfig.StatusNonceHeader, nonce)
	resp, err := tr.RoundTrip(req)
	if err != nil {
		// Never the URL: it holds the password.
		return fmt.Errorf("vmstatus: asking %s for its status: %w", proxyURL.Host, unwrapURL(err))
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return fmt.Errorf("vmstatus: reading %s's status: %w", proxyURL.Host, err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("vmstatus: %s answered its status request %s (%s)", proxyURL.Host, resp.Status, resp.Header.Get("X-Egress-Error"))
	}
	want := vmconfig.SignAnswer(key.SignKey(uid, id), nonce, method, path, body)
	if got := resp.Header.Get(vmconfig.StatusSignatureHeader); !hmac.Equal([]byte(got), []byte(want)) {
		// Whoever answered at the VM's address is not the VM of this
		// id: a reused address, someone on the path, a replay, or a VM
		// of an older engine.
		return fmt.Errorf("vmstatus: %s (uid %s, status id %s) refused: %s %s: %w", proxyURL.Host, uid, id, method, path, ErrUnsigned)
	}
	if err := json.Unmarshal(body, out); err != nil {
		return fmt.Errorf("vmstatus: %s's status is not JSON: %w", proxyURL.Host, err)
	}
	return nil
}

// unwrapURL drops a *url.Error's URL, which names the proxy with its
// credential.
func unwrapURL(err error) error {
	if u, ok := err.(*url.Error); ok {
		return u.Err
	}
	return err
}
