package imagetest

import (
	"net"
	"net/netip"
	"strings"
	"sync"
	"time"

	"golang.org/x/net/dns/dnsmessage"
)

// DNS stands in for the resolver a Compute Engine VM is given, which is the
// metadata server's own address (169.254.169.254, port 53): it answers A
// queries for a few fixed names and NXDOMAIN for the rest, over UDP, and
// records every query. It lets the test see that the proxy resolves names
// through that resolver although it may not reach anything else of the
// metadata server.
type DNS struct {
	names map[string]netip.Addr // "name." → IPv4

	mu      sync.Mutex
	queries []Query
	conn    net.PacketConn
}

// Query is one question the resolver was asked.
type Query struct {
	Time time.Time
	From string
	Name string
	Type string
}

// NewDNS serves conn until it is closed, answering names (without the
// trailing dot) with their addresses.
func NewDNS(conn net.PacketConn, names map[string]netip.Addr) *DNS {
	d := &DNS{names: map[string]netip.Addr{}, conn: conn}
	for n, a := range names {
		d.names[strings.ToLower(strings.TrimSuffix(n, "."))+"."] = a
	}
	go d.serve()
	return d
}

// Queries returns the questions so far.
func (d *DNS) Queries() []Query {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]Query(nil), d.queries...)
}

// Close stops the resolver.
func (d *DNS) Close() error { return d.conn.Close() }

func (d *DNS) serve() {
	buf := make([]byte, 1500)
	for {
		n, from, err := d.conn.ReadFrom(buf)
		if err != nil {
			return
		}
		if reply, ok := d.answer(buf[:n], from.String()); ok {
			d.conn.WriteTo(reply, from)
		}
	}
}

// answer builds the reply to one query; ok is false for a packet that is
// not a query with one question, which gets no reply at all.
func (d *DNS) answer(packet []byte, from string) ([]byte, bool) {
	var p dnsmessage.Parser
	h, err := p.Start(packet)
	if err != nil || h.Response {
		return nil, false
	}
	q, err := p.Question()
	if err != nil {
		return nil, false
	}
	name := strings.ToLower(q.Name.String())
	d.mu.Lock()
	d.queries = append(d.queries, Query{Time: time.Now(), From: from, Name: name, Type: q.Type.String()})
	d.mu.Unlock()

	addr, known := d.names[name]
	rh := dnsmessage.Header{ID: h.ID, Response: true, Authoritative: true, RecursionDesired: h.RecursionDesired,
		RecursionAvailable: true, RCode: dnsmessage.RCodeSuccess}
	if !known {
		rh.RCode = dnsmessage.RCodeNameError
	}
	b := dnsmessage.NewBuilder(nil, rh)
	b.EnableCompression()
	if b.StartQuestions() != nil || b.Question(q) != nil || b.StartAnswers() != nil {
		return nil, false
	}
	// A known name has an IPv4 address only: AAAA gets an empty answer.
	if known && q.Type == dnsmessage.TypeA && q.Class == dnsmessage.ClassINET {
		rr := dnsmessage.ResourceHeader{Name: q.Name, Type: dnsmessage.TypeA, Class: dnsmessage.ClassINET, TTL: 60}
		if b.AResource(rr, dnsmessage.AResource{A: addr.As4()}) != nil {
			return nil, false
		}
	}
	out, err := b.Finish()
	return out, err == nil
}
