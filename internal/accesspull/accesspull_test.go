package accesspull_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/egress-proxies/egress/internal/accesspull"
	"github.com/egress-proxies/egress/internal/callhome"
	"github.com/egress-proxies/egress/internal/proxy"
	"github.com/egress-proxies/egress/internal/vm/vmconfig"
)

// reader answers each VM (by IP) from a script: the page for each
// cursor; an IP or a cursor not in it does not answer. It records what
// it was asked.
type reader struct {
	mu    sync.Mutex
	pages map[string]map[int64]vmconfig.AccessPage
	asked []string
}

func (r *reader) Access(_ context.Context, ip string, port int32, uid, id string, after int64) (vmconfig.AccessPage, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if id != "" {
		uid += "/" + id
	}
	r.asked = append(r.asked, fmt.Sprintf("%s:%d %s after %d", ip, port, uid, after))
	p, ok := r.pages[ip][after]
	if !ok {
		return vmconfig.AccessPage{}, errors.New("no answer")
	}
	return p, nil
}

// store keeps cursors in a map, and the proxies of uids.
type store struct {
	mu      sync.Mutex
	cursors map[string]proxy.AccessCursor
	proxies map[string]proxyDoc
	failPut bool
}

type proxyDoc struct {
	key       proxy.Key
	accessLog bool
	// vms are the VMs the document names (status.providerID,
	// reconciler.retiring).
	vms []string
}

func (s *store) AccessCursors(context.Context) ([]proxy.AccessCursor, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Collect(maps.Values(s.cursors)), nil
}

func (s *store) PutAccessCursor(_ context.Context, c proxy.AccessCursor) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failPut {
		return errors.New("firestore unavailable")
	}
	s.cursors[c.ProviderID] = c
	return nil
}

func (s *store) DeleteAccessCursor(_ context.Context, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.cursors, id)
	return nil
}

func (s *store) ProxyOfUID(_ context.Context, uid string) (proxy.UIDProxy, error) {
	d, ok := s.proxies[uid]
	if !ok {
		return proxy.UIDProxy{}, proxy.ErrNotFound
	}
	return proxy.UIDProxy{Key: d.key, AccessLog: d.accessLog, VMs: d.vms}, nil
}

// sink records the lines written, as "uid namespace/name provider instance
// zone: host:port status" each, and fails the writes of failFor.
type sink struct {
	mu      sync.Mutex
	lines   []string
	failFor string
}

func (s *sink) Write(_ context.Context, l callhome.Labels, lines []vmconfig.AccessLine) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if l.UID == s.failFor {
		return errors.New("logging unavailable")
	}
	for _, line := range lines {
		s.lines = append(s.lines, fmt.Sprintf("%s %s/%s %s %s %s: %s:%d %d", l.UID, l.Namespace, l.Name, l.Provider, l.Instance.Name, l.Instance.Zone, line.Host, line.Port, line.Status))
	}
	return nil
}

var at = time.Date(2026, 12, 5, 3, 0, 0, 0, time.UTC)

// page is a page of n lines to host, numbered up to next.
func page(n int, host string, next, dropped int64) vmconfig.AccessPage {
	p := vmconfig.AccessPage{Next: next, Dropped: dropped, Lines: []vmconfig.AccessLine{}}
	for range n {
		p.Lines = append(p.Lines, vmconfig.AccessLine{Time: at, Protocol: vmconfig.ProtocolConnect, Method: "CONNECT", Host: host, Port: 443, Status: 200})
	}
	return p
}

// vm is a running VM read by pull, of uid, at ip.
func vm(uid, ip string) proxy.PulledVM {
	return proxy.PulledVM{Provider: "hetzner", ProviderID: "hcloud://" + uid, UID: uid, IP: ip, Zone: "fsn1", Port: 3128, Running: true}
}

func cursor(uid, name string, after int64) proxy.AccessCursor {
	return proxy.AccessCursor{Provider: "hetzner", ProviderID: "hcloud://" + uid, UID: uid, Namespace: "team", Name: name, AccessLog: true, After: after, Named: true}
}

// line is how sink records one line of page to host, of the VM of uid
// serving team/name.
func line(uid, name, host string) string {
	return fmt.Sprintf("%s team/%s hetzner hcloud://%s fsn1: %s:443 200", uid, name, uid, host)
}

func repeat(s string, n int) []string { return slices.Repeat([]string{s}, n) }

func TestPull(t *testing.T) {
	docs := map[string]proxyDoc{
		"u1":  {key: proxy.Key{Namespace: "team", Name: "web"}, accessLog: true, vms: []string{"hcloud://u1"}},
		"u2":  {key: proxy.Key{Namespace: "team", Name: "api"}, accessLog: true, vms: []string{"hcloud://u2"}},
		"off": {key: proxy.Key{Namespace: "team", Name: "quiet"}, accessLog: false, vms: []string{"hcloud://off"}},
		// A make-before-break rotation: the new VM and the one it
		// retires, both named.
		"rot": {key: proxy.Key{Namespace: "team", Name: "rot"}, accessLog: true, vms: []string{"hcloud://rot-new", "hcloud://rot-old"}},
	}
	// impostor is an instance someone made in the project with u1's uid
	// label: the document names another VM.
	impostor := proxy.PulledVM{Provider: "hetzner", ProviderID: "hcloud://evil", UID: "u1", IP: "198.51.100.9", Zone: "fsn1", Port: 3128, Running: true}
	rotVM := func(id, ip string) proxy.PulledVM {
		return proxy.PulledVM{Provider: "hetzner", ProviderID: "hcloud://" + id, UID: "rot", IP: ip, Zone: "fsn1", Port: 3128, Running: true}
	}
	rotCursor := func(id string, after int64) proxy.AccessCursor {
		return proxy.AccessCursor{Provider: "hetzner", ProviderID: "hcloud://" + id, UID: "rot", Namespace: "team", Name: "rot", AccessLog: true, After: after, Named: true}
	}
	unchecked := func(c proxy.AccessCursor) proxy.AccessCursor { c.Named = false; return c }
	full := vmconfig.AccessPageMax
	cases := map[string]struct {
		reason   string
		req      proxy.AccessPull
		cursors  []proxy.AccessCursor
		pages    map[string]map[int64]vmconfig.AccessPage
		maxPages int
		budget   time.Duration
		failSink string
		failPut  bool

		wantCursors []proxy.AccessCursor
		wantLines   []string
		wantAsked   []string
		wantSummary accesspull.Summary
	}{
		"a new VM": {
			reason:      "a VM seen first is found by its uid, asked from its engine's first line, and its lines go under its proxy's labels",
			req:         proxy.AccessPull{Listed: []string{"hetzner"}, VMs: []proxy.PulledVM{vm("u1", "192.0.2.1")}},
			pages:       map[string]map[int64]vmconfig.AccessPage{"192.0.2.1": {0: page(2, "api.example.com", 2, 0)}},
			wantCursors: []proxy.AccessCursor{cursor("u1", "web", 2)},
			wantLines:   repeat(line("u1", "web", "api.example.com"), 2),
			wantAsked:   []string{"192.0.2.1:3128 u1 after 0"},
			wantSummary: accesspull.Summary{Asked: 1, Lines: 2},
		},
		"from the cursor": {
			reason:      "a VM seen before is asked after its cursor, and its cursor moves past the lines written",
			req:         proxy.AccessPull{Listed: []string{"hetzner"}, VMs: []proxy.PulledVM{vm("u1", "192.0.2.1")}},
			cursors:     []proxy.AccessCursor{cursor("u1", "web", 40)},
			pages:       map[string]map[int64]vmconfig.AccessPage{"192.0.2.1": {40: page(1, "a.example", 41, 0)}},
			wantCursors: []proxy.AccessCursor{cursor("u1", "web", 41)},
			wantLines:   []string{line("u1", "web", "a.example")},
			wantAsked:   []string{"192.0.2.1:3128 u1 after 40"},
			wantSummary: accesspull.Summary{Asked: 1, Lines: 1},
		},
		"pages followed": {
			reason: "a full page is followed by the next until one comes back short",
			req:    proxy.AccessPull{Listed: []string{"hetzner"}, VMs: []proxy.PulledVM{vm("u1", "192.0.2.1")}},
			pages: map[string]map[int64]vmconfig.AccessPage{"192.0.2.1": {
				0: page(full, "a.example", int64(full), 0), int64(full): page(3, "b.example", int64(full)+3, 0)}},
			wantCursors: []proxy.AccessCursor{cursor("u1", "web", int64(full)+3)},
			wantLines:   append(repeat(line("u1", "web", "a.example"), full), repeat(line("u1", "web", "b.example"), 3)...),
			wantAsked:   []string{"192.0.2.1:3128 u1 after 0", fmt.Sprintf("192.0.2.1:3128 u1 after %d", full)},
			wantSummary: accesspull.Summary{Asked: 1, Lines: int64(full) + 3},
		},
		"pages bounded": {
			reason:   "a VM is read at most MaxPages pages a run: the rest are the next run's",
			req:      proxy.AccessPull{Listed: []string{"hetzner"}, VMs: []proxy.PulledVM{vm("u1", "192.0.2.1")}},
			maxPages: 1,
			pages: map[string]map[int64]vmconfig.AccessPage{"192.0.2.1": {
				0: page(full, "a.example", int64(full), 0), int64(full): page(3, "b.example", int64(full)+3, 0)}},
			wantCursors: []proxy.AccessCursor{cursor("u1", "web", int64(full))},
			wantLines:   repeat(line("u1", "web", "a.example"), full),
			wantAsked:   []string{"192.0.2.1:3128 u1 after 0"},
			wantSummary: accesspull.Summary{Asked: 1, Lines: int64(full)},
		},
		"one VM fails": {
			reason:      "a VM that does not answer is counted and keeps its cursor; the others are read",
			req:         proxy.AccessPull{Listed: []string{"hetzner"}, VMs: []proxy.PulledVM{vm("u1", "192.0.2.1"), vm("u2", "192.0.2.2")}},
			cursors:     []proxy.AccessCursor{cursor("u1", "web", 7)},
			pages:       map[string]map[int64]vmconfig.AccessPage{"192.0.2.2": {0: page(1, "b.example", 1, 0)}},
			wantCursors: []proxy.AccessCursor{cursor("u1", "web", 7), cursor("u2", "api", 1)},
			wantLines:   []string{line("u2", "api", "b.example")},
			wantAsked:   []string{"192.0.2.1:3128 u1 after 7", "192.0.2.2:3128 u2 after 0"},
			wantSummary: accesspull.Summary{Asked: 2, Failed: 1, Lines: 1},
		},
		"the log fails": {
			reason:      "lines the log refused leave the cursor before them: they are asked again next time, never lost",
			req:         proxy.AccessPull{Listed: []string{"hetzner"}, VMs: []proxy.PulledVM{vm("u1", "192.0.2.1")}},
			cursors:     []proxy.AccessCursor{cursor("u1", "web", 7)},
			pages:       map[string]map[int64]vmconfig.AccessPage{"192.0.2.1": {7: page(2, "a.example", 9, 0)}},
			failSink:    "u1",
			wantCursors: []proxy.AccessCursor{cursor("u1", "web", 7)},
			wantAsked:   []string{"192.0.2.1:3128 u1 after 7"},
			wantSummary: accesspull.Summary{Asked: 1, Failed: 1},
		},
		"the cursor cannot be written": {
			reason:      "lines written whose cursor could not be kept are counted, and the VM counts as failed (they will be written again)",
			req:         proxy.AccessPull{Listed: []string{"hetzner"}, VMs: []proxy.PulledVM{vm("u1", "192.0.2.1")}},
			cursors:     []proxy.AccessCursor{cursor("u1", "web", 7)},
			pages:       map[string]map[int64]vmconfig.AccessPage{"192.0.2.1": {7: page(2, "a.example", 9, 0)}},
			failPut:     true,
			wantCursors: []proxy.AccessCursor{cursor("u1", "web", 7)},
			wantLines:   repeat(line("u1", "web", "a.example"), 2),
			wantAsked:   []string{"192.0.2.1:3128 u1 after 7"},
			wantSummary: accesspull.Summary{Asked: 1, Failed: 1, Lines: 2},
		},
		"lines dropped": {
			reason:      "a page that says the engine let lines go counts them (the ring was overrun between two ticks)",
			req:         proxy.AccessPull{Listed: []string{"hetzner"}, VMs: []proxy.PulledVM{vm("u1", "192.0.2.1")}},
			cursors:     []proxy.AccessCursor{cursor("u1", "web", 10)},
			pages:       map[string]map[int64]vmconfig.AccessPage{"192.0.2.1": {10: page(4, "a.example", 110, 96)}},
			wantCursors: []proxy.AccessCursor{cursor("u1", "web", 110)},
			wantLines:   repeat(line("u1", "web", "a.example"), 4),
			wantAsked:   []string{"192.0.2.1:3128 u1 after 10"},
			wantSummary: accesspull.Summary{Asked: 1, Lines: 4, Dropped: 96},
		},
		"lines refused": {
			reason: "a line outside the AccessLine contract is not written; the cursor passes it",
			req:    proxy.AccessPull{Listed: []string{"hetzner"}, VMs: []proxy.PulledVM{vm("u1", "192.0.2.1")}},
			pages: map[string]map[int64]vmconfig.AccessPage{"192.0.2.1": {0: {Next: 2, Lines: []vmconfig.AccessLine{
				{Time: at, Protocol: vmconfig.ProtocolConnect, Host: "a.example", Port: 443, Status: 200},
				{Protocol: vmconfig.ProtocolConnect, Host: "no-time.example", Port: 443, Status: 200},
			}}}},
			wantCursors: []proxy.AccessCursor{cursor("u1", "web", 2)},
			wantLines:   []string{line("u1", "web", "a.example")},
			wantAsked:   []string{"192.0.2.1:3128 u1 after 0"},
			wantSummary: accesspull.Summary{Asked: 1, Lines: 1, Refused: 1},
		},
		"budget spent": {
			reason:      "once the run's budget is spent no VM is begun: they keep their cursors for the next tick",
			req:         proxy.AccessPull{Listed: []string{"hetzner"}, VMs: []proxy.PulledVM{vm("u1", "192.0.2.1"), vm("u2", "192.0.2.2")}},
			cursors:     []proxy.AccessCursor{cursor("u1", "web", 7)},
			budget:      -time.Second,
			pages:       map[string]map[int64]vmconfig.AccessPage{"192.0.2.1": {7: page(2, "a.example", 9, 0)}},
			wantCursors: []proxy.AccessCursor{cursor("u1", "web", 7)},
			wantSummary: accesspull.Summary{Deferred: 2},
		},
		"not running": {
			reason:      "a VM its provider does not list running is not asked, and keeps its cursor",
			req:         proxy.AccessPull{Listed: []string{"hetzner"}, VMs: []proxy.PulledVM{{Provider: "hetzner", ProviderID: "hcloud://u1", UID: "u1", IP: "192.0.2.1", Port: 3128}}},
			cursors:     []proxy.AccessCursor{cursor("u1", "web", 7)},
			wantCursors: []proxy.AccessCursor{cursor("u1", "web", 7)},
		},
		"access log off": {
			reason:      "a VM of a proxy that keeps no access log is not asked; its cursor says so, so it is looked up once",
			req:         proxy.AccessPull{Listed: []string{"hetzner"}, VMs: []proxy.PulledVM{vm("off", "192.0.2.3")}},
			wantCursors: []proxy.AccessCursor{{Provider: "hetzner", ProviderID: "hcloud://off", UID: "off", Namespace: "team", Name: "quiet", Named: true}},
			wantSummary: accesspull.Summary{Skipped: 1},
		},
		"no proxy": {
			reason:      "a VM whose proxy document is gone has nothing to file its lines under: not asked, no cursor",
			req:         proxy.AccessPull{Listed: []string{"hetzner"}, VMs: []proxy.PulledVM{vm("gone", "192.0.2.4")}},
			wantSummary: accesspull.Summary{Skipped: 1},
		},
		"impostor": {
			reason: "an instance with a proxy's uid label that the proxy's document does not name gets no request (no status credential) and nothing is written under the proxy's name; the named VM is read",
			req:    proxy.AccessPull{Listed: []string{"hetzner"}, VMs: []proxy.PulledVM{impostor, vm("u1", "192.0.2.1")}},
			pages: map[string]map[int64]vmconfig.AccessPage{
				"198.51.100.9": {0: page(1, "forged.example", 1, 0)},
				"192.0.2.1":    {0: page(1, "a.example", 1, 0)}},
			wantCursors: []proxy.AccessCursor{cursor("u1", "web", 1)},
			wantLines:   []string{line("u1", "web", "a.example")},
			wantAsked:   []string{"192.0.2.1:3128 u1 after 0"},
			wantSummary: accesspull.Summary{Asked: 1, Lines: 1, NotNamed: 1},
		},
		"retiring VM": {
			reason: "the VM a make-before-break rotation retires is named by the document too, and is read beside the new one",
			req:    proxy.AccessPull{Listed: []string{"hetzner"}, VMs: []proxy.PulledVM{rotVM("rot-new", "192.0.2.5"), rotVM("rot-old", "192.0.2.6")}},
			pages: map[string]map[int64]vmconfig.AccessPage{
				"192.0.2.5": {0: page(1, "new.example", 1, 0)},
				"192.0.2.6": {0: page(1, "old.example", 1, 0)}},
			wantCursors: []proxy.AccessCursor{rotCursor("rot-new", 1), rotCursor("rot-old", 1)},
			wantLines: []string{"rot team/rot hetzner hcloud://rot-new fsn1: new.example:443 200",
				"rot team/rot hetzner hcloud://rot-old fsn1: old.example:443 200"},
			wantAsked:   []string{"192.0.2.5:3128 rot after 0", "192.0.2.6:3128 rot after 0"},
			wantSummary: accesspull.Summary{Asked: 2, Lines: 2},
		},
		"unchecked cursor of the VM": {
			reason:      "a cursor made before the pull checked the document is looked up again; the named VM keeps its place",
			req:         proxy.AccessPull{Listed: []string{"hetzner"}, VMs: []proxy.PulledVM{vm("u1", "192.0.2.1")}},
			cursors:     []proxy.AccessCursor{unchecked(cursor("u1", "web", 7))},
			pages:       map[string]map[int64]vmconfig.AccessPage{"192.0.2.1": {7: page(1, "a.example", 8, 0)}},
			wantCursors: []proxy.AccessCursor{cursor("u1", "web", 8)},
			wantLines:   []string{line("u1", "web", "a.example")},
			wantAsked:   []string{"192.0.2.1:3128 u1 after 7"},
			wantSummary: accesspull.Summary{Asked: 1, Lines: 1},
		},
		"unchecked cursor of an impostor": {
			reason:      "a cursor an impostor got before the pull checked the document does not let it be asked again",
			req:         proxy.AccessPull{Listed: []string{"hetzner"}, VMs: []proxy.PulledVM{impostor}},
			cursors:     []proxy.AccessCursor{{Provider: "hetzner", ProviderID: "hcloud://evil", UID: "u1", Namespace: "team", Name: "web", AccessLog: true, After: 3}},
			pages:       map[string]map[int64]vmconfig.AccessPage{"198.51.100.9": {3: page(1, "forged.example", 4, 0)}},
			wantCursors: []proxy.AccessCursor{{Provider: "hetzner", ProviderID: "hcloud://evil", UID: "u1", Namespace: "team", Name: "web", AccessLog: true, After: 3}},
			wantSummary: accesspull.Summary{NotNamed: 1},
		},
		"VMs gone": {
			reason: "the cursor of a VM its provider no longer lists is deleted, if that provider was listed completely",
			req:    proxy.AccessPull{Listed: []string{"hetzner"}},
			cursors: []proxy.AccessCursor{cursor("u1", "web", 7),
				{Provider: "aws", ProviderID: "aws://eu-west-1/i-1", UID: "u2", Namespace: "team", Name: "api", AccessLog: true}},
			wantCursors: []proxy.AccessCursor{{Provider: "aws", ProviderID: "aws://eu-west-1/i-1", UID: "u2", Namespace: "team", Name: "api", AccessLog: true}},
			wantSummary: accesspull.Summary{Deleted: 1},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			st := &store{cursors: map[string]proxy.AccessCursor{}, proxies: docs}
			for _, c := range tc.cursors {
				st.cursors[c.ProviderID] = c
			}
			st.failPut = tc.failPut
			r := &reader{pages: tc.pages}
			sk := &sink{failFor: tc.failSink}
			var logs bytes.Buffer
			p := &accesspull.Puller{Readers: map[string]accesspull.Reader{"hetzner": r}, Store: st, Sink: sk, Log: slog.New(slog.NewTextHandler(&logs, nil)), MaxPages: tc.maxPages, Budget: tc.budget}
			got, err := p.Pull(context.Background(), tc.req)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.wantSummary, got); diff != "" {
				t.Errorf("%s\nsummary (-want +got):\n%s", tc.reason, diff)
			}
			byID := func(a, b proxy.AccessCursor) int { return strings.Compare(a.ProviderID, b.ProviderID) }
			gotCursors := slices.SortedFunc(maps.Values(st.cursors), byID)
			if diff := cmp.Diff(slices.SortedFunc(slices.Values(tc.wantCursors), byID), gotCursors, cmpEmpty); diff != "" {
				t.Errorf("%s\ncursors (-want +got):\n%s", tc.reason, diff)
			}
			slices.Sort(sk.lines)
			if diff := cmp.Diff(slices.Sorted(slices.Values(tc.wantLines)), sk.lines, cmpEmpty); diff != "" {
				t.Errorf("%s\nlines written (-want +got):\n%s", tc.reason, diff)
			}
			slices.Sort(r.asked)
			if diff := cmp.Diff(tc.wantAsked, r.asked, cmpEmpty); diff != "" {
				t.Errorf("%s\nasked (-want +got):\n%s", tc.reason, diff)
			}
		})
	}
}

var cmpEmpty = cmpopts.EquateEmpty()

// TestEachProviderItsReader: a VM is asked by its own provider's reader
// (each cloud's VM side has its prober), with its status id, and a VM of a provider with no
// reader is not asked by another's: it fails, and the others go on.
func TestEachProviderItsReader(t *testing.T) {
	docs := map[string]proxyDoc{
		"u1": {proxy.Key{Namespace: "team", Name: "web"}, true, []string{"hcloud://1"}},
		"u2": {proxy.Key{Namespace: "team", Name: "api"}, true, []string{"aws://eu-west-1/i-2"}},
		"u3": {proxy.Key{Namespace: "team", Name: "db"}, true, []string{"other://3"}},
	}
	hetzner := &reader{pages: map[string]map[int64]vmconfig.AccessPage{"192.0.2.1": {0: page(1, "a.example", 1, 0)}}}
	aws := &reader{pages: map[string]map[int64]vmconfig.AccessPage{"192.0.2.2": {0: page(1, "b.example", 1, 0)}}}
	st := &store{cursors: map[string]proxy.AccessCursor{}, proxies: docs}
	p := &accesspull.Puller{Readers: map[string]accesspull.Reader{"hetzner": hetzner, "aws": aws}, Store: st, Sink: &sink{}, Log: slog.New(slog.DiscardHandler)}
	req := proxy.AccessPull{Listed: []string{"hetzner", "aws", "other"}, VMs: []proxy.PulledVM{
		{Provider: "hetzner", ProviderID: "hcloud://1", UID: "u1", StatusID: "s1", IP: "192.0.2.1", Port: 3128, Running: true},
		{Provider: "aws", ProviderID: "aws://eu-west-1/i-2", UID: "u2", IP: "192.0.2.2", Port: 3128, Running: true},
		{Provider: "other", ProviderID: "other://3", UID: "u3", IP: "192.0.2.3", Port: 3128, Running: true},
	}}
	got, err := p.Pull(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(accesspull.Summary{Asked: 2, Failed: 1, Lines: 2}, got); diff != "" {
		t.Errorf("summary (-want +got):\n%s", diff)
	}
	asked := map[string][]string{"hetzner": hetzner.asked, "aws": aws.asked}
	want := map[string][]string{"hetzner": {"192.0.2.1:3128 u1/s1 after 0"}, "aws": {"192.0.2.2:3128 u2 after 0"}}
	if diff := cmp.Diff(want, asked); diff != "" {
		t.Errorf("what each reader was asked (-want +got):\n%s", diff)
	}
}
