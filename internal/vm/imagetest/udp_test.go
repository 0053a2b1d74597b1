package imagetest

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/netip"
	"testing"
	"time"

	"golang.org/x/net/dns/dnsmessage"

	"github.com/egress-proxies/egress/internal/vm/vmconfig"
)

// UpstreamDNSAddr is a resolver on the test's internet, at the plain HTTP
// host's address (port 53 over UDP), which a SOCKS5 UDP client asks
// through the proxy; it knows UpstreamDNSName alone.
var UpstreamDNSAddr = HTTPHostAddr

// UpstreamDNSName is the name the upstream resolver answers with
// TLSHostAddr, and the VM's own resolver does not know.
const UpstreamDNSName = "udp.example.net"

// socks5UDPAssociate opens a SOCKS5 UDP association on the VM's proxy
// from the client's address, saying it will send from port (0: its first
// datagram's), and returns the control connection, which the
// association lives as long as.
func (r *run) socks5UDPAssociate(ctx context.Context, port int) (net.Conn, error) {
	conn, err := r.topo.Internet.Dialer(ClientAddr)(ctx, "tcp", HostPort(VMPrefix.Addr(), Socks5Port))
	if err != nil {
		return nil, err
	}
	if d, ok := ctx.Deadline(); ok {
		conn.SetDeadline(d)
	}
	user, password := r.creds.Username, r.creds.Password
	msg := []byte{5, 1, 2, 1, byte(len(user))}
	msg = append(append(msg, user...), byte(len(password)))
	msg = append(msg, password...)
	msg = append(msg, 5, 3, 0, 1, 0, 0, 0, 0)
	msg = binary.BigEndian.AppendUint16(msg, uint16(port))
	if _, err := conn.Write(msg); err != nil {
		conn.Close()
		return nil, err
	}
	// Method selection, authentication status, and the reply with an
	// IPv4 bound address: 2 + 2 + 10 bytes.
	var in [14]byte
	if _, err := io.ReadFull(conn, in[:]); err != nil {
		conn.Close()
		return nil, fmt.Errorf("SOCKS5 UDP ASSOCIATE: %w", err)
	}
	if in[1] != 2 || in[3] != 0 || in[5] != 0 {
		conn.Close()
		return nil, fmt.Errorf("SOCKS5 UDP ASSOCIATE answered % x: want method 2, authentication 0, reply 0", in)
	}
	conn.SetDeadline(time.Time{})
	return conn, nil
}

// dnsQuery is an A query for name, wrapped in the SOCKS5 UDP header to
// the resolver at to.
func dnsQuery(t *testing.T, id uint16, name string, to netip.AddrPort) []byte {
	t.Helper()
	b := dnsmessage.NewBuilder(nil, dnsmessage.Header{ID: id, RecursionDesired: true})
	b.StartQuestions()
	b.Question(dnsmessage.Question{Name: dnsmessage.MustNewName(name + "."), Type: dnsmessage.TypeA, Class: dnsmessage.ClassINET})
	q, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	head := []byte{0, 0, 0, 1}
	head = append(head, to.Addr().AsSlice()...)
	head = binary.BigEndian.AppendUint16(head, to.Port())
	return append(head, q...)
}

// checkSocks5UDPThrough (issue 46's Socks5UDPThrough): a DNS query over
// UDP through the proxy's SOCKS5 UDP association to a resolver on the
// internet is answered, the answer wrapped in the header naming the
// resolver; one to the metadata server's address is dropped (the
// metadata server's resolver never sees it) and counted in the
// association's access line.
func checkSocks5UDPThrough(t *testing.T, ctx context.Context, r *run, c *Container) {
	ctx, cancel := CheckTimeout(ctx)
	defer cancel()
	control, err := r.socks5UDPAssociate(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer control.Close()
	pc, err := r.topo.Internet.ListenPacket(HostPort(ClientAddr, 0))
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	d, _ := ctx.Deadline()
	pc.SetDeadline(d)
	relay := net.UDPAddrFromAddrPort(netip.AddrPortFrom(VMPrefix.Addr(), Socks5Port))
	upstream := netip.AddrPortFrom(UpstreamDNSAddr, DNSPort)
	metadataName := "udp-to-metadata-" + randomHex(4) + ".example"
	// The denied query first: the answer to the allowed one after it
	// says the relay took both.
	if _, err := pc.WriteTo(dnsQuery(t, 1, metadataName, netip.AddrPortFrom(MetadataAddr, DNSPort)), relay); err != nil {
		t.Fatal(err)
	}
	if _, err := pc.WriteTo(dnsQuery(t, 2, UpstreamDNSName, upstream), relay); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 1500)
	n, _, err := pc.ReadFrom(buf)
	if err != nil {
		t.Fatalf("no answer through the association: %v", err)
	}
	if n < 10 || buf[3] != 1 || netip.AddrFrom4([4]byte(buf[4:8])) != UpstreamDNSAddr || binary.BigEndian.Uint16(buf[8:10]) != DNSPort {
		t.Fatalf("the answer's header % x does not name the resolver %s", buf[:min(n, 10)], upstream)
	}
	var p dnsmessage.Parser
	h, err := p.Start(buf[10:n])
	if err != nil || h.ID != 2 {
		t.Fatalf("the answer is not the query's (ID %d, %v)", h.ID, err)
	}
	p.SkipAllQuestions()
	a, err := p.AnswerHeader()
	if err != nil {
		t.Fatalf("no answer record: %v", err)
	}
	rr, err := p.AResource()
	if err != nil || a.Type != dnsmessage.TypeA || netip.AddrFrom4(rr.A) != TLSHostAddr {
		t.Errorf("the answer %+v, %+v: want A %s", a, rr, TLSHostAddr)
	}
	for _, q := range r.dns.Queries() {
		if q.Name == metadataName+"." {
			t.Errorf("the metadata server's resolver was asked %s through the proxy", q.Name)
		}
	}
	control.Close()
	_, statsPort, _ := net.SplitHostPort(r.engine.StatsListen)
	var line *vmconfig.AccessLine
	for deadline := time.Now().Add(10 * time.Second); line == nil && time.Now().Before(deadline); {
		out, err := c.Exec(ctx, "curl", "-fsS", "--max-time", "5", "http://127.0.0.1:"+statsPort+"/access?after=0")
		if err != nil {
			t.Fatalf("GET /access on the VM: %v: %s", err, out)
		}
		var page vmconfig.AccessPage
		if err := json.Unmarshal(out, &page); err != nil {
			t.Fatalf("GET /access: %q: %v", out, err)
		}
		for i, l := range page.Lines {
			if l.Method == "UDP ASSOCIATE" && l.Source != "" && netip.MustParseAddrPort(l.Source).Addr() == ClientAddr {
				line = &page.Lines[i]
			}
		}
		if line == nil {
			time.Sleep(200 * time.Millisecond)
		}
	}
	if line == nil {
		t.Fatal("no access line for the association")
	}
	if line.User != r.creds.Username || line.Status != 0 || line.DatagramsIn != 1 || line.DatagramsOut != 1 || line.DatagramsDenied != 1 ||
		line.DatagramsFragmented != 0 || line.DatagramsDropped != 0 || line.DatagramBytesOut != int64(n) {
		t.Errorf("the association's line %+v: want its user, status 0, one datagram each way (%d bytes back), one denied", *line, n)
	}
}
