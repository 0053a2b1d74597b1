package imagetest

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/vm/vmconfig"
	"github.com/egress-proxies/egress/internal/vmidentity"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/api/option"
)

// checkReady: the boot's ready says generation want, and came after the
// script cleared both attributes, and no error was ever written.
func checkReady(t *testing.T, r *run, since time.Time, ready GuestWrite, want int64) {
	if ready.Value != strconv.FormatInt(want, 10) {
		t.Errorf("egress/ready %q, want %d, the generation of the configuration the VM was given", ready.Value, want)
	}
	var deleted []string
	for _, w := range r.metadata.GuestLog() {
		if w.Method == http.MethodPut && w.Key == guestError {
			t.Errorf("egress/error was written at %s: %q", w.Time.Format(time.TimeOnly), w.Value)
		}
		if w.Method == http.MethodDelete && !w.Time.Before(since) && w.Time.Before(ready.Time) {
			deleted = append(deleted, w.Key)
		}
	}
	if ready.Key != guestReady {
		t.Errorf("waited for %s, got %s", guestReady, ready.Key)
	}
	for _, k := range []string{guestReady, guestError} {
		if !contains(deleted, k) {
			t.Errorf("the script did not DELETE %s before writing egress/ready (deleted: %v)", k, deleted)
		}
	}
}

// proxyReady is the call-home of the test's proxy's VM once it serves.
var proxyReady = map[string]any{"namespace": namespace, "name": proxyName, "uid": uid, "reason": "ready"}

// checkCallHome: one publish to the call-home topic, with the token
// the metadata server handed out and the message want (the VM's names).
func checkCallHome(t *testing.T, ctx context.Context, r *run, want map[string]any) {
	// The script calls home right after it writes ready.
	deadline := time.Now().Add(20 * time.Second)
	var ok []Publish
	for {
		ok = ok[:0]
		for _, p := range r.pubsub.Publishes() {
			if p.Status == http.StatusOK {
				ok = append(ok, p)
			}
		}
		if len(ok) > 0 || time.Now().After(deadline) || ctx.Err() != nil {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if len(ok) == 0 {
		t.Fatalf("no accepted publish; all calls: %+v", r.pubsub.Publishes())
	}
	p := ok[0]
	if p.Topic != topic {
		t.Errorf("published to %q, want %q", p.Topic, topic)
	}
	if p.Authorization != "Bearer "+r.token {
		t.Errorf("Authorization %q, want the metadata server's token", p.Authorization)
	}
	if len(p.Data) != 1 {
		t.Fatalf("%d messages in the publish, want 1", len(p.Data))
	}
	// Who sent it: the identity token the metadata server signed for this
	// instance, which the control plane's verifier accepts as this VM's
	// and no other.
	v, err := vmidentity.NewVerifier(ctx, topic, project, "proxy-vm@"+project+".iam.gserviceaccount.com", option.WithHTTPClient(r.metadata.Issuer.KeysClient()))
	if err != nil {
		t.Fatal(err)
	}
	if in, err := v.Verify(ctx, p.Attributes[0][vmconfig.IdentityAttribute]); err != nil || in.Name != r.instance || in.Zone != zone {
		t.Errorf("the call-home's identity: %+v, %v; want instance %s of %s", in, err, r.instance, zone)
	}
	got, err := decodeJSON(p.Data[0])
	if err != nil {
		t.Fatalf("message data %q is not JSON: %v", p.Data[0], err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("call-home message (-want +got):\n%s", diff)
	}
}

// checkProviderRunning: the guest attributes the booted VM wrote, handed
// to the Compute fake as Compute Engine would keep them, make the gcp
// provider's Get say Running, where before them it said Provisioning. The
// two stand-ins are separate servers, so the test carries the values
// across; what it proves is that the provider reads the keys and values
// the real script writes.
func checkProviderRunning(t *testing.T, ctx context.Context, r *run, gen int64) {
	r.compute.Settle()
	before, err := r.provider.Get(ctx, r.providerID)
	if err != nil {
		t.Fatal(err)
	}
	if before.State != provider.StateProvisioning {
		t.Errorf("before any guest attribute: %s, want %s", before.State, provider.StateProvisioning)
	}
	checkProviderReads(t, ctx, r, gen)
}

// checkProviderReads: the guest attributes the VM wrote, carried to the
// Compute fake, make the gcp provider's Get say Running and serving
// generation gen, the value the reconciler compares with the document's.
func checkProviderReads(t *testing.T, ctx context.Context, r *run, gen int64) {
	written := r.metadata.GuestAttributes()
	if len(written) == 0 {
		t.Fatal("the VM wrote no guest attribute")
	}
	for k, v := range written {
		r.compute.SetGuestAttribute(zone, r.instance, k, v)
	}
	after, err := r.provider.Get(ctx, r.providerID)
	if err != nil {
		t.Fatal(err)
	}
	if after.State != provider.StateRunning || after.BootError != "" || after.Generation != gen {
		t.Errorf("with the VM's guest attributes %v: state %s, boot error %q, generation %d; want %s, none and %d",
			written, after.State, after.BootError, after.Generation, provider.StateRunning, gen)
	}
}

// checkListeners: nothing but the proxy listens on an address reachable
// from outside the VM (§10 of the design: "nothing else listens
// publicly"); the engine's counters listen on loopback only.
func checkListeners(t *testing.T, ctx context.Context, c *Container) {
	out, err := c.Exec(ctx, "ss", "-H", "-l", "-n", "-t", "-u")
	if err != nil {
		t.Fatal(err)
	}
	sawProxy := false
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if len(f) < 5 {
			continue
		}
		// Netid State Recv-Q Send-Q Local Peer; Local is ADDR:PORT, with
		// ADDR "*", "0.0.0.0", "[::]", or one address, maybe "%IFACE".
		local := f[4]
		i := strings.LastIndex(local, ":")
		if i < 0 {
			continue
		}
		addr, port := strings.Trim(local[:i], "[]"), local[i+1:]
		addr, _, _ = strings.Cut(addr, "%")
		if a, err := netip.ParseAddr(addr); err == nil && a.IsLoopback() {
			continue
		}
		if port != strconv.Itoa(ProxyPort) && port != strconv.Itoa(Socks5Port) {
			t.Errorf("something besides the proxy (HTTP and SOCKS5) listens on %s: %s", local, line)
		}
		sawProxy = sawProxy || port == strconv.Itoa(ProxyPort)
	}
	if !sawProxy {
		t.Errorf("ss shows no listener on the proxy port %d:\n%s", ProxyPort, out)
	}
}

// checkRunner: Debian's guest agent ran the script, as on Compute Engine,
// and the script ran to its end: google_metadata_script_runner logs each
// script's exit status (and itself exits 0 whatever the script did, so the
// unit's own result says nothing). The script calls home just before it
// ends, so this waits a little for the line.
func checkRunner(t *testing.T, ctx context.Context, c *Container) {
	const want = "startup-script exit status 0"
	deadline := time.Now().Add(30 * time.Second)
	for {
		out, err := c.Exec(ctx, "journalctl", "-b", "--no-pager", "-o", "cat", "-u", "google-startup-scripts.service")
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(out), want) {
			return
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			t.Fatalf("no %q from google-startup-scripts.service within 30 s; its journal:\n%s", want, out)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// checkConnectTLS: a tunnel to the TLS host, a verified handshake through
// it, the host's own answer, and the host saw the VM as the client.
func checkConnectTLS(t *testing.T, ctx context.Context, r *run) {
	ctx, cancel := CheckTimeout(ctx)
	defer cancel()
	before := len(r.tlsHost.Hits())
	body, err := r.client("client", r.creds.Username, r.creds.Password).GetTLS(ctx, HostPort(TLSHostAddr, TLSPort), TLSHostName, r.roots, "/via-connect")
	if err != nil {
		t.Fatal(err)
	}
	if body != r.tlsHost.Body {
		t.Errorf("body %q, want the TLS host's %q", body, r.tlsHost.Body)
	}
	hits := r.tlsHost.Hits()[before:]
	if len(hits) != 1 || !r.fromVM(hits[0].RemoteAddr) {
		t.Errorf("the TLS host saw %+v, want one request from the VM (%s)", hits, r.egressAddr())
	}
}

// checkConnectByName: a CONNECT to the TLS host by name works, the name
// having been resolved by the proxy through the VM's resolver (the
// metadata server's address, port 53), which the egress filter must leave
// open while it closes the metadata server's port 80.
func checkConnectByName(t *testing.T, ctx context.Context, r *run) {
	ctx, cancel := CheckTimeout(ctx)
	defer cancel()
	before := len(r.dns.Queries())
	target := TLSHostName + ":" + strconv.Itoa(TLSPort)
	body, err := r.client("client", r.creds.Username, r.creds.Password).GetTLS(ctx, target, TLSHostName, r.roots, "/by-name")
	if err != nil {
		t.Fatalf("%v (the resolver was asked: %+v)", err, r.dns.Queries()[before:])
	}
	if body != r.tlsHost.Body {
		t.Errorf("body %q, want the TLS host's %q", body, r.tlsHost.Body)
	}
	asked := false
	for _, q := range r.dns.Queries()[before:] {
		asked = asked || (q.Name == TLSHostName+"." && q.Type == "TypeA" && strings.HasPrefix(q.From, r.egressAddr().String()+":"))
	}
	if !asked {
		// A resolver may have cached the name from the self-test's
		// probe; then the self-test's query is the proof.
		for _, q := range r.dns.Queries() {
			// The self-test's, at boot, before a Static Droplet's
			// route went through its anchor, from the VM's own
			// address.
			asked = asked || (q.Name == TLSHostName+"." && (strings.HasPrefix(q.From, VMPrefix.Addr().String()+":") || strings.HasPrefix(q.From, r.egressAddr().String()+":")))
		}
	}
	if !asked {
		t.Errorf("the resolver was never asked for %s by the VM: %+v", TLSHostName, r.dns.Queries())
	}
}

// checkGet: a plain proxied GET reaches the HTTP host from the VM.
func checkGet(t *testing.T, ctx context.Context, r *run) {
	ctx, cancel := CheckTimeout(ctx)
	defer cancel()
	before := len(r.httpHost.Hits())
	status, body, err := r.client("client", r.creds.Username, r.creds.Password).Get(ctx, "http://"+HostPort(HTTPHostAddr, HTTPPort)+"/via-get", nil)
	if err != nil {
		t.Fatal(err)
	}
	if status != http.StatusOK || body != r.httpHost.Body {
		t.Errorf("GET through the proxy: %d %q, want 200 %q", status, body, r.httpHost.Body)
	}
	hits := r.httpHost.Hits()[before:]
	if len(hits) != 1 || !r.fromVM(hits[0].RemoteAddr) || hits[0].URI != "/via-get" {
		t.Errorf("the HTTP host saw %+v, want one GET /via-get from the VM", hits)
	}
}

// checkAuth: without the right credentials both a CONNECT and a GET are
// answered 407 with a Proxy-Authenticate challenge (a 401 would make a
// client blame the target site), and neither reaches its host.
func checkAuth(t *testing.T, ctx context.Context, r *run, user, password string) {
	ctx, cancel := CheckTimeout(ctx)
	defer cancel()
	c := r.client("client", user, password)
	tlsBefore, httpBefore := len(r.tlsHost.Hits()), len(r.httpHost.Hits())
	resp, tunnel, err := c.ConnectAnswer(ctx, HostPort(TLSHostAddr, TLSPort))
	if tunnel != nil {
		tunnel.Close()
	}
	checkChallenge(t, "CONNECT", resp, err)
	resp, _, err = c.GetAnswer(ctx, "http://"+HostPort(HTTPHostAddr, HTTPPort)+"/unauthorised", nil)
	checkChallenge(t, "GET", resp, err)
	if n := len(r.httpHost.Hits()) - httpBefore; n != 0 {
		t.Errorf("the HTTP host was reached %d times", n)
	}
	if n := len(r.tlsHost.Hits()) - tlsBefore; n != 0 {
		t.Errorf("the TLS host was reached %d times", n)
	}
}

func checkChallenge(t *testing.T, what string, resp *http.Response, err error) {
	t.Helper()
	switch {
	case err != nil:
		t.Errorf("%s: %v", what, err)
	case resp.StatusCode != http.StatusProxyAuthRequired:
		t.Errorf("%s: status %d, want 407", what, resp.StatusCode)
	case !strings.HasPrefix(resp.Header.Get("Proxy-Authenticate"), "Basic"):
		t.Errorf("%s: 407 with Proxy-Authenticate %q, want a Basic challenge", what, resp.Header.Get("Proxy-Authenticate"))
	}
}

// checkEngineInstalled: the storage stand-in served the engine downloads
// times in all (so a second boot, which finds the binary in place,
// downloads nothing), each with the VM's token, and the binary the VM runs
// is the object the metadata names.
func checkEngineInstalled(t *testing.T, ctx context.Context, r *run, c *Container, downloads int) {
	if got := r.storage.Downloads(); len(got) != downloads {
		t.Errorf("the engine was downloaded %d times, want %d: %+v", len(got), downloads, got)
	}
	out, err := c.Exec(ctx, "sha256sum", vmconfig.EnginePath)
	if err != nil {
		t.Fatal(err)
	}
	if got, _, _ := strings.Cut(string(out), " "); got != r.storage.SHA256() {
		t.Errorf("the VM's %s has SHA-256 %s, want the object's %s", vmconfig.EnginePath, got, r.storage.SHA256())
	}
	out, err = c.Exec(ctx, "systemctl", "is-active", "egress-proxy.service")
	if err != nil || strings.TrimSpace(string(out)) != "active" {
		t.Errorf("egress-proxy.service is %q (%v), want active", strings.TrimSpace(string(out)), err)
	}
}

// installTime is how long the script's install of the engine took, from
// its two log lines; zero when it installed nothing.
func installTime(ctx context.Context, c *Container) time.Duration {
	return installTimeOf(ctx, c, "-u", "google-startup-scripts.service")
}

// installTimeOf is installTime from the journal lines filter selects
// (journalctl's -u UNIT or -t IDENTIFIER): those of what ran the script.
func installTimeOf(ctx context.Context, c *Container, filter ...string) time.Duration {
	out, err := c.Exec(ctx, append([]string{"journalctl", "-b", "--no-pager", "-o", "short-unix"}, filter...)...)
	if err != nil {
		return 0
	}
	var from, to float64
	for _, l := range strings.Split(string(out), "\n") {
		ts, msg, ok := strings.Cut(l, " ")
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(ts, 64)
		switch {
		case err != nil:
		case strings.Contains(msg, "egress-bootstrap: installing the proxy engine"):
			from = v
		case strings.Contains(msg, "egress-bootstrap: installed the proxy engine"):
			to = v
		}
	}
	if from == 0 || to < from {
		return 0
	}
	return time.Duration((to - from) * float64(time.Second))
}

// trafficReport is the guest attribute egress/traffic: vmconfig.Stats
// with the time of the report.
type trafficReport struct {
	vmconfig.Stats
	ReportTime time.Time `json:"reportTime"`
}

// reportTraffic runs the VM's reporter now, as its timer does every 30 s,
// and returns what it wrote.
func reportTraffic(t *testing.T, ctx context.Context, r *run, c *Container) trafficReport {
	t.Helper()
	since := time.Now()
	if _, err := c.Exec(ctx, "systemctl", "start", "egress-traffic.service"); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	w, err := r.metadata.WaitGuest(wctx, since, trafficKey)
	if err != nil {
		t.Fatalf("no egress/traffic written: %v", err)
	}
	var rep trafficReport
	if err := json.Unmarshal([]byte(w.Value), &rep); err != nil {
		t.Fatalf("egress/traffic %q is not the engine's counters: %v", w.Value, err)
	}
	return rep
}

// checkTraffic: the timer reports on its own, and a report after known
// traffic (GETs of a known size over TLS, each through a tunnel of its
// own) counts at least those bytes and connections more than the one
// before.
func checkTraffic(t *testing.T, ctx context.Context, r *run, c *Container) {
	if out, err := c.Exec(ctx, "systemctl", "is-active", "egress-traffic.timer"); err != nil || strings.TrimSpace(string(out)) != "active" {
		t.Errorf("egress-traffic.timer is %q (%v), want active", strings.TrimSpace(string(out)), err)
	}
	before := reportTraffic(t, ctx, r, c)
	const gets, size = 4, 256 << 10
	for i := range gets {
		rctx, cancel := CheckTimeout(ctx)
		body, err := r.client("client", r.creds.Username, r.creds.Password).GetTLS(rctx, HostPort(TLSHostAddr, TLSPort), TLSHostName, r.roots, "/bytes/"+strconv.Itoa(size))
		cancel()
		if err != nil || len(body) != size {
			t.Fatalf("GET %d: %d bytes through a tunnel, want %d: %v", i, len(body), size, err)
		}
	}
	after := reportTraffic(t, ctx, r, c)
	if d := after.BytesOut - before.BytesOut; d < gets*size {
		t.Errorf("bytesOut grew by %d, want at least the %d bytes sent to the client (%+v, then %+v)", d, gets*size, before, after)
	}
	if d := after.BytesIn - before.BytesIn; d < gets*200 {
		t.Errorf("bytesIn grew by %d, want at least the %d TLS handshakes and requests (%+v, then %+v)", d, gets, before, after)
	}
	if d := after.Connections - before.Connections; d < gets {
		t.Errorf("connections grew by %d, want at least %d (%+v, then %+v)", d, gets, before, after)
	}
	if !after.ReportTime.After(before.ReportTime.Add(-time.Second)) || after.ReportTime.IsZero() {
		t.Errorf("report times %s then %s", before.ReportTime, after.ReportTime)
	}
}

// checkNoSecret: the proxy's password, in clear or as the Basic
// credentials a client sends, is in no metadata value the gcp provider
// sent, no line of the VM's journal (every unit: the script's, the
// engine's, the guest agent's) and not on its console.
func checkNoSecret(t *testing.T, ctx context.Context, r *run, c *Container, consolePath string) {
	secrets := []string{r.creds.Password, base64.StdEncoding.EncodeToString([]byte(r.creds.Username + ":" + r.creds.Password))}
	for k, v := range r.metadata.Attributes() {
		for _, s := range secrets {
			if strings.Contains(v, s) {
				t.Errorf("metadata %s holds the password", k)
			}
		}
	}
	journal, err := c.Exec(ctx, "journalctl", "-b", "--no-pager", "-o", "cat")
	if err != nil {
		t.Fatal(err)
	}
	console, err := os.ReadFile(consolePath)
	if err != nil {
		t.Fatal(err)
	}
	for name, text := range map[string]string{"journal": string(journal), "console": string(console)} {
		for _, s := range secrets {
			if strings.Contains(text, s) {
				t.Errorf("the VM's %s holds the password", name)
			}
		}
	}
	if len(journal) < 1000 {
		t.Errorf("the journal has %d bytes: nothing to search", len(journal))
	}
}

// checkIngress: a client in the allowed range can open a connection to
// the proxy port, one outside cannot: the host's filter drops it before
// the engine sees it.
func checkIngress(t *testing.T, ctx context.Context, r *run) {
	dial := func(from netip.Addr) error {
		ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		defer cancel()
		conn, err := r.topo.Internet.Dialer(from)(ctx, "tcp", ProxyAddr())
		if err == nil {
			conn.Close()
		}
		return err
	}
	if err := dial(ClientAddr); err != nil {
		t.Fatalf("control: a client inside the allowed range cannot connect either: %v", err)
	}
	if err := dial(OutsiderAddr); err == nil {
		ctx, cancel := CheckTimeout(ctx)
		defer cancel()
		status, tunnel, err := r.client("outsider", r.creds.Username, r.creds.Password).Connect(ctx, HostPort(TLSHostAddr, TLSPort))
		if tunnel != nil {
			tunnel.Close()
		}
		t.Errorf("%s, outside %s, opened a connection to the proxy port (a CONNECT with credentials then got %d, %v)",
			OutsiderAddr, AllowedRange, status, err)
	}
}

// checkRefused: the proxy answers a CONNECT, with credentials, to each of
// targets (ways of naming one place) with an error, and nothing reached
// the place. Every target is tried, so one that gets through is named
// beside those that did not.
func checkRefused(t *testing.T, ctx context.Context, r *run, s *Sink, targets ...string) {
	for _, target := range targets {
		ctx, cancel := CheckTimeout(ctx)
		status, tunnel, err := r.client("client", r.creds.Username, r.creds.Password).Connect(ctx, target)
		cancel()
		switch {
		case err != nil:
			t.Errorf("CONNECT %s: no answer from the proxy: %v", target, err)
		case tunnel != nil:
			// Say what got through, for the record the metadata check reads.
			fmt.Fprintf(tunnel, "GET /computeMetadata/v1/instance/attributes/%s HTTP/1.1\r\nHost: %s\r\nMetadata-Flavor: Google\r\n\r\n", probeMarker, target)
			line, _ := bufio.NewReader(tunnel).ReadString('\n')
			tunnel.Close()
			t.Errorf("CONNECT %s: 200, the tunnel is open (the far end answered %q)", target, strings.TrimSpace(line))
		case status == http.StatusOK || status == 0:
			t.Errorf("CONNECT %s: status %d, want a refusal", target, status)
		}
	}
	if s != nil {
		if from := s.Accepted(); len(from) > 0 {
			t.Errorf("%s accepted connections from %v", s.Addr(), from)
		}
	}
}

// checkMetadataGet: a plain GET for the metadata server, with the header
// it wants, is not answered by it.
func checkMetadataGet(t *testing.T, ctx context.Context, r *run) {
	checkMetadataGetOf(t, ctx, r, "/computeMetadata/v1/instance/attributes/"+probeMarker, http.Header{"Metadata-Flavor": {"Google"}})
}

// checkMetadataGetOf: a plain GET of path on the metadata server, with
// header, through the proxy is refused and never reaches it.
func checkMetadataGetOf(t *testing.T, ctx context.Context, r *run, path string, header http.Header) {
	ctx, cancel := CheckTimeout(ctx)
	defer cancel()
	url := "http://" + HostPort(MetadataAddr, MetadataPort) + path
	status, body, err := r.client("client", r.creds.Username, r.creds.Password).Get(ctx, url, header)
	if err != nil {
		t.Fatalf("GET %s: no answer from the proxy: %v", url, err)
	}
	if status == http.StatusOK {
		t.Errorf("GET %s through the proxy: 200 %q", url, body)
	}
	if got := markedRequests(r); len(got) > 0 {
		t.Errorf("the metadata server answered the proxied GET: %+v", got)
	}
}

// checkMetadataUntouched: of all the requests the metadata server got,
// none came through the proxy.
func checkMetadataUntouched(t *testing.T, r *run) {
	if got := markedRequests(r); len(got) > 0 {
		t.Errorf("the metadata server received requests sent through the proxy: %+v", got)
	}
	for _, q := range r.metadataRequests() {
		if q.Forwarded != "" {
			t.Errorf("the metadata server received a forwarded request: %+v", q)
		}
	}
}

// checkReboot: the second boot cleared both attributes before it wrote
// ready again, and wrote no error.
func checkReboot(t *testing.T, r *run, since time.Time, ready GuestWrite) {
	checkReady(t, r, since, ready, 1)
}

// metadataRequests are the requests the metadata server's stand-in got,
// Google's or a cloud-init cloud's (Hetzner's, EC2's).
func (r *run) metadataRequests() []Request {
	if r.cloud != nil {
		return r.cloud.metadata.Requests()
	}
	return r.metadata.Requests()
}

func markedRequests(r *run) []Request {
	var out []Request
	for _, q := range r.metadataRequests() {
		if strings.Contains(q.URI, probeMarker) {
			out = append(out, q)
		}
	}
	return out
}

// fromVM says remote is the VM's, as the test's hosts see its traffic
// (egressAddr).
func (r *run) fromVM(remote string) bool {
	ap, err := netip.ParseAddrPort(remote)
	return err == nil && ap.Addr() == r.egressAddr()
}

// egressAddr is the address the VM's traffic reaches the test's hosts
// from: its own, or the anchor a cloud's shape gives its VM (VM.Anchor: a
// Static DigitalOcean Droplet's, once it routes through its reserved
// IP's anchor gateway).
func (r *run) egressAddr() netip.Addr {
	if r.cloud != nil && r.cloud.anchor.IsValid() {
		return r.cloud.anchor.Addr()
	}
	return VMPrefix.Addr()
}
