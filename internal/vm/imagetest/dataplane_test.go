package imagetest

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/egress-proxies/egress/internal/vm/engine/loadtest"
	"github.com/egress-proxies/egress/internal/vm/vmconfig"
)

// socksClient is a SOCKS5 client of the VM's proxy at the client's
// address, with the given credentials.
func (r *run) socksClient(user, password string) loadtest.Proxy {
	return loadtest.Proxy{Addr: HostPort(VMPrefix.Addr(), Socks5Port), User: user, Password: password, Socks5: true,
		Dial: r.topo.Internet.Dialer(ClientAddr)}
}

// checkSocks5Through: a SOCKS5 CONNECT by host name (the proxy resolves
// it, as curl --socks5-hostname asks), a verified TLS handshake through
// it and the TLS host's answer, the host seeing the VM as its client.
func checkSocks5Through(t *testing.T, ctx context.Context, r *run) {
	ctx, cancel := CheckTimeout(ctx)
	defer cancel()
	before := len(r.tlsHost.Hits())
	tunnel, err := r.socksClient(r.creds.Username, r.creds.Password).Connect(ctx, TLSHostName+":"+strconv.Itoa(TLSPort))
	if err != nil {
		t.Fatalf("SOCKS5 CONNECT %s:%d: %v", TLSHostName, TLSPort, err)
	}
	defer tunnel.Close()
	body, err := GetOverTunnel(ctx, tunnel, TLSHostName, r.roots, "/via-socks5")
	if err != nil {
		t.Fatal(err)
	}
	if body != r.tlsHost.Body {
		t.Errorf("body %q, want the TLS host's %q", body, r.tlsHost.Body)
	}
	if hits := r.tlsHost.Hits()[before:]; len(hits) != 1 || !r.fromVM(hits[0].RemoteAddr) {
		t.Errorf("the TLS host saw %+v, want one request from the VM", hits)
	}
}

// checkSocks5WrongPassword: a wrong password is answered with RFC 1929's
// failure status, and nothing is reached.
func checkSocks5WrongPassword(t *testing.T, ctx context.Context, r *run) {
	ctx, cancel := CheckTimeout(ctx)
	defer cancel()
	before := len(r.tlsHost.Hits())
	tunnel, err := r.socksClient(r.creds.Username, r.creds.Password+"x").Connect(ctx, HostPort(TLSHostAddr, TLSPort))
	if tunnel != nil {
		tunnel.Close()
	}
	var se *loadtest.SocksError
	if !errors.As(err, &se) || se.Stage != "authentication" || se.Code != 1 {
		t.Errorf("SOCKS5 with a wrong password: %v, want the authentication refused (status 1)", err)
	}
	if n := len(r.tlsHost.Hits()) - before; n != 0 {
		t.Errorf("the TLS host was reached %d times", n)
	}
}

// checkZoneIDRefused: a destination with an IPv6 zone ID is refused
// (403, zone-not-allowed) before any range is checked, by CONNECT, by an
// absolute-form GET and by SOCKS5: a zone makes an address fall outside
// every denied range, and Linux ignores it for an address that is not
// link-local, so [::1%25eth0] would be ::1.
func checkZoneIDRefused(t *testing.T, ctx context.Context, r *run) {
	ctx, cancel := CheckTimeout(ctx)
	defer cancel()
	c := r.client("client", r.creds.Username, r.creds.Password)
	for _, target := range []string{"[::1%25lo]:" + strconv.Itoa(TLSPort), "[::ffff:" + MetadataAddr.String() + "%25eth0]:80", "[fe80::1%25eth0]:443"} {
		resp, tunnel, err := c.ConnectAnswer(ctx, target)
		switch {
		case err != nil:
			t.Errorf("CONNECT %s: %v", target, err)
		case tunnel != nil:
			tunnel.Close()
			t.Errorf("CONNECT %s: 200, the tunnel is open", target)
		case resp.StatusCode != http.StatusForbidden || resp.Header.Get("X-Egress-Error") != "zone-not-allowed":
			t.Errorf("CONNECT %s: %d %q, want 403 zone-not-allowed", target, resp.StatusCode, resp.Header.Get("X-Egress-Error"))
		}
	}
	// Written by hand: net/http's client drops a zone from what it sends.
	url := "http://[::ffff:" + MetadataAddr.String() + "%25eth0]:80/computeMetadata/v1/instance/attributes/" + probeMarker
	conn, err := c.Dial(ctx, "tcp", c.Proxy)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: metadata\r\nMetadata-Flavor: Google\r\nProxy-Authorization: Basic %s\r\n\r\n",
		url, base64.StdEncoding.EncodeToString([]byte(r.creds.Username+":"+r.creds.Password)))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil || resp.StatusCode != http.StatusForbidden || resp.Header.Get("X-Egress-Error") != "zone-not-allowed" {
		t.Errorf("GET %s: %v %v, want 403 zone-not-allowed", url, resp, err)
	}
	tunnel, err := r.socksClient(r.creds.Username, r.creds.Password).Connect(ctx, "[::1%lo]:"+strconv.Itoa(TLSPort))
	var se *loadtest.SocksError
	if tunnel != nil {
		tunnel.Close()
	}
	if !errors.As(err, &se) || se.Stage != "request" || se.Code != 2 {
		t.Errorf("SOCKS5 CONNECT to a zoned address: %v, want the request refused (02)", err)
	}
	if got := markedRequests(r); len(got) > 0 {
		t.Errorf("the metadata server answered: %+v", got)
	}
}

// checkAccessLogLine: a tunnel through the proxy leaves one access line,
// served to the VM's agent on the engine's loopback listener and written
// to the journal: the user, the protocol, the destination's host and
// port, 200, its bytes; and no line holds a path.
func checkAccessLogLine(t *testing.T, ctx context.Context, r *run, c *Container) {
	ctx, cancel := CheckTimeout(ctx)
	defer cancel()
	path := "/access-log-" + randomHex(4)
	if _, err := r.client("client", r.creds.Username, r.creds.Password).GetTLS(ctx, HostPort(TLSHostAddr, TLSPort), TLSHostName, r.roots, path); err != nil {
		t.Fatal(err)
	}
	status, body, err := r.client("client", r.creds.Username, r.creds.Password).Get(ctx, "http://"+HostPort(HTTPHostAddr, HTTPPort)+path+"?token=secret", nil)
	if err != nil || status != http.StatusOK {
		t.Fatalf("GET through the proxy: %d %q %v", status, body, err)
	}
	_, statsPort, _ := net.SplitHostPort(r.engine.StatsListen)
	var page vmconfig.AccessPage
	deadline := time.Now().Add(10 * time.Second)
	var connect, get bool
	for !(connect && get) && time.Now().Before(deadline) {
		out, err := c.Exec(ctx, "curl", "-fsS", "--max-time", "5", "http://127.0.0.1:"+statsPort+"/access?after=0")
		if err != nil {
			t.Fatalf("GET /access on the VM: %v: %s", err, out)
		}
		if err := json.Unmarshal(out, &page); err != nil {
			t.Fatalf("GET /access: %q: %v", out, err)
		}
		connect, get = false, false
		for _, l := range page.Lines {
			connect = connect || l.Protocol == vmconfig.ProtocolConnect && l.User == r.creds.Username && l.Host == TLSHostAddr.String() &&
				l.Port == TLSPort && l.Status == http.StatusOK && l.BytesOut > 0 && strings.HasPrefix(l.Source, ClientAddr.String()+":")
			get = get || l.Protocol == vmconfig.ProtocolHTTP && l.Method == http.MethodGet && l.Host == HTTPHostAddr.String() && l.Port == HTTPPort && l.Status == http.StatusOK
		}
		if !(connect && get) {
			time.Sleep(200 * time.Millisecond)
		}
	}
	if !connect || !get {
		t.Errorf("no access line for the tunnel (%t) or the GET (%t) in %+v", connect, get, page.Lines)
	}
	js, _ := json.Marshal(page)
	if strings.Contains(string(js), path) || strings.Contains(string(js), "secret") {
		t.Errorf("an access line holds the path or the query: %s", js)
	}
	journal, err := c.Exec(ctx, "journalctl", "-b", "--no-pager", "-o", "cat", "-u", "egress-proxy.service")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(journal), `"message":"access"`) || !strings.Contains(string(journal), `"host":"`+TLSHostAddr.String()+`"`) {
		t.Errorf("the engine's journal has no access line for the tunnel")
	}
}

// checkPipelinedSmugglingRefused: issue 41's stream, three requests in one
// write where the second carries Content-Length and Transfer-Encoding and
// its "body" starts a third: the first is carried, the second answered
// 400 bad-framing and the connection closed, and the HTTP host never sees
// the third (RFC 9112 §6.1, §6.3: whatever the position in the pipeline).
func checkPipelinedSmugglingRefused(t *testing.T, ctx context.Context, r *run) {
	ctx, cancel := CheckTimeout(ctx)
	defer cancel()
	c := r.client("client", r.creds.Username, r.creds.Password)
	conn, err := c.Dial(ctx, "tcp", c.Proxy)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(20 * time.Second))
	before := len(r.httpHost.Hits())
	origin := "http://" + HostPort(HTTPHostAddr, HTTPPort)
	auth := "Proxy-Authorization: Basic " + base64.StdEncoding.EncodeToString([]byte(r.creds.Username+":"+r.creds.Password)) + "\r\n"
	io.WriteString(conn, "GET "+origin+"/pipelined?n=1 HTTP/1.1\r\nHost: x\r\n"+auth+"\r\n"+
		"POST "+origin+"/pipelined-upload HTTP/1.1\r\nHost: x\r\n"+auth+"Content-Length: 6\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nG"+
		"ET "+origin+"/pipelined?smuggled=1 HTTP/1.1\r\nHost: x\r\n"+auth+"\r\n")
	br := bufio.NewReader(conn)
	var answers []string
	for {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Errorf("after %q: %v, want the connection closed", answers, err)
			}
			break
		}
		io.Copy(io.Discard, resp.Body)
		answers = append(answers, strconv.Itoa(resp.StatusCode)+" "+resp.Header.Get("X-Egress-Error"))
	}
	if want := []string{"200 ", "400 bad-framing"}; strings.Join(answers, "|") != strings.Join(want, "|") {
		t.Errorf("answers %q, want %q and the connection closed", answers, want)
	}
	var uris []string
	for _, h := range r.httpHost.Hits()[before:] {
		uris = append(uris, h.URI)
	}
	if len(uris) != 1 || uris[0] != "/pipelined?n=1" {
		t.Errorf("the HTTP host saw %q, want only /pipelined?n=1", uris)
	}
}

// checkSocks4Refused: a SOCKS4a client on the SOCKS5 port gets SOCKS4's
// "request rejected" (00 5B and six bytes), not a reset, and nothing is
// carried.
func checkSocks4Refused(t *testing.T, ctx context.Context, r *run) {
	ctx, cancel := CheckTimeout(ctx)
	defer cancel()
	c := r.client("client", r.creds.Username, r.creds.Password)
	conn, err := c.Dial(ctx, "tcp", HostPort(VMPrefix.Addr(), Socks5Port))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(20 * time.Second))
	before := len(r.httpHost.Hits())
	a := HTTPHostAddr.As4()
	conn.Write(append([]byte{4, 1, 0, HTTPPort, a[0], a[1], a[2], a[3]}, r.creds.Username+"\x00"...))
	got := make([]byte, 8)
	if _, err := io.ReadFull(conn, got); err != nil {
		t.Fatalf("SOCKS4 reply: %v", err)
	}
	if want := []byte{0, 0x5b, 0, 0, 0, 0, 0, 0}; string(got) != string(want) {
		t.Errorf("SOCKS4 reply % x, want % x", got, want)
	}
	if hits := r.httpHost.Hits()[before:]; len(hits) != 0 {
		t.Errorf("the HTTP host saw %+v", hits)
	}
}
