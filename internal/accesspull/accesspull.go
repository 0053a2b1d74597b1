// Package accesspull reads the access lines of the proxy VMs that have
// no call-home (the clouds whose plugin's readiness is the status door:
// no Google identity to publish with) and writes them where a call-home's
// lines go: the log
// egress-proxy-access, through the same Sink (internal/callhome,
// internal/accesslog), under the same labels (the proxy's uid, namespace
// and name).
//
// The garbage collector asks for it once a tick (proxy.ReasonAccessPull,
// naming the VMs its listings found: proxy.AccessPull), and Reconcile,
// which holds the status key and the log writer, runs Puller.Pull. Each
// running VM is asked through its proxy port (vmstatus.Prober.Access:
// GET http://egress-status.invalid/access?after=N with the VM's own status
// credential, its answer signed by the VM) for the lines after its cursor, page after page while
// pages come back full (vmconfig.AccessPageMax lines), at most MaxPages.
//
// Delivery is at least once: a VM's cursor (proxy.AccessCursor, one
// document per VM) is written only after the lines it passes were
// written to the log, so a crash between the two writes a page again,
// and never loses one. The engine keeps its newest 4096 lines: a VM that
// writes more between two ticks loses the oldest, and the page says how
// many (Dropped), which is logged as the call-home path logs it. An
// engine that restarted (a reboot) numbers its lines from 1 again, and
// answers a cursor beyond its last line from its first.
//
// A VM is found to be a proxy's once, by its uid, and its cursor keeps
// the labels and whether the proxy keeps an access log (a VM of a proxy
// with accessLog false is not asked: its engine keeps no line). On these
// clouds a VM serves one proxy and one configuration for its life (a
// change makes a new VM), so the labels cannot go stale.
//
// The uid label alone proves nothing: anyone who may create or tag
// instances in the cloud's project can put a proxy's uid on one. So a VM
// is asked only when the proxy document of its uid names it, as
// status.providerID or as the VM a make-before-break rotation retires
// (reconciler.retiring), the rule the call-home path holds a VM's
// lines to (internal/callhome). Any other VM with the uid gets no
// request, so no status credential, and nothing is written under the
// proxy's name; it is counted NotNamed and looked at again each tick (a
// VM just made is named once its create is recorded). The cursor records
// that the check passed (proxy.AccessCursor.Named).
//
// One VM's failure (it does not answer, the log refuses a write) is
// logged and leaves its cursor where the lines written left it; the
// others go on, and the next tick asks again. VMs are asked Parallelism
// at a time, and none is begun once the run's Budget is spent, so that
// a fleet of VMs that do not answer cannot outlast Reconcile's timeout. The cursors of VMs no
// longer listed by a provider that was listed completely are deleted.
//
// The package is pure logic: it sees the VMs, the store and the log
// through the narrow interfaces below.
package accesspull

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/egress-proxies/egress/internal/callhome"
	"github.com/egress-proxies/egress/internal/proxy"
	"github.com/egress-proxies/egress/internal/vm/vmconfig"
	"github.com/egress-proxies/egress/internal/vmidentity"
)

// Defaults of Puller.
const (
	// DefaultParallelism bounds the VMs asked at once.
	DefaultParallelism = 8
	// DefaultMaxPages bounds the pages read of one VM in one run: five
	// full pages are more than the engine holds (4096 lines), so a run
	// reads all a VM has unless it writes faster than it is read.
	DefaultMaxPages = 5
	// DefaultBudget is how long a run starts asking VMs: Reconcile's
	// timeout is 5 minutes (deploy/terraform/functions.tf), and a VM
	// begun just before the budget ends still has its pages' time. The
	// VMs not begun are the next tick's.
	DefaultBudget = 4 * time.Minute
)

// Reader reads a VM's access lines through its proxy port.
// *vmstatus.Prober satisfies it. Each call is bounded in time by the
// reader.
type Reader interface {
	// Access returns the lines after line number after (0: from the
	// first the engine holds) of the proxy at ip:port serving the proxy
	// uid, the VM of status id id: at most vmconfig.AccessPageMax, the
	// number to ask after next, and how many lines after `after` the
	// engine let go unread. An answer not signed by that VM is an error.
	Access(ctx context.Context, ip string, port int32, uid, id string, after int64) (vmconfig.AccessPage, error)
}

// Store keeps the cursors and finds a VM's proxy. *store.Store satisfies
// it.
type Store interface {
	// AccessCursors returns every VM's cursor.
	AccessCursors(ctx context.Context) ([]proxy.AccessCursor, error)
	// PutAccessCursor writes a VM's cursor.
	PutAccessCursor(ctx context.Context, c proxy.AccessCursor) error
	// DeleteAccessCursor deletes a VM's cursor; one not there is no error.
	DeleteAccessCursor(ctx context.Context, providerID string) error
	// ProxyOfUID returns the proxy document of uid, whether it keeps an
	// access log and the VMs it names; proxy.ErrNotFound when there is
	// none.
	ProxyOfUID(ctx context.Context, uid string) (proxy.UIDProxy, error)
}

// Puller reads the VMs' access lines into the Sink.
type Puller struct {
	// Readers ask the VMs, by provider type: each cloud's VM side has
	// its own prober.
	Readers map[string]Reader
	Store   Store
	Sink    callhome.Sink
	Log     *slog.Logger
	// Parallelism bounds the VMs asked at once; zero is
	// DefaultParallelism.
	Parallelism int
	// MaxPages bounds the pages read of one VM in one run; zero is
	// DefaultMaxPages.
	MaxPages int
	// Budget is how long the run begins asking VMs; zero is
	// DefaultBudget.
	Budget time.Duration
}

// Summary is what one run did.
type Summary struct {
	// Asked is the number of VMs asked for their lines; Failed, those of
	// them whose lines could not all be read or written.
	Asked, Failed int
	// Lines is the number of lines written to the log, Dropped the number
	// the engines said they let go unread, Refused the number dropped
	// for not being of the AccessLine contract (callhome.CheckLine).
	Lines, Dropped, Refused int64
	// Skipped are the running VMs not asked: of a proxy that keeps no
	// access log, or whose proxy document was not found.
	Skipped int
	// NotNamed are the running VMs not asked because the proxy document
	// of their uid does not name them (status.providerID,
	// reconciler.retiring): one not recorded yet, or an impostor.
	NotNamed int
	// Deleted is the number of cursors of VMs gone that were deleted.
	Deleted int
	// Deferred are the running VMs not asked because the run's Budget
	// was spent: the next tick asks them.
	Deferred int
}

// Pull reads the access lines of the running VMs of req and writes them
// to the Sink, then deletes the cursors of VMs gone. It returns an error
// only when it could do nothing (the cursors could not be read), which is
// worth a redelivery; one VM's failure is logged, counted and retried by
// the next tick.
func (p *Puller) Pull(ctx context.Context, req proxy.AccessPull) (Summary, error) {
	var s Summary
	list, err := p.Store.AccessCursors(ctx)
	if err != nil {
		return s, fmt.Errorf("reading the access cursors: %w", err)
	}
	cursors := make(map[string]proxy.AccessCursor, len(list))
	for _, c := range list {
		cursors[c.ProviderID] = c
	}
	var running []proxy.PulledVM
	for _, vm := range req.VMs {
		if vm.Running && vm.IP != "" && vm.UID != "" && vm.Port > 0 {
			running = append(running, vm)
		}
	}
	budget, cancel := context.WithTimeout(ctx, cmp.Or(p.Budget, DefaultBudget))
	defer cancel()
	var mu sync.Mutex
	p.forEach(len(running), func(i int) {
		var r vmResult
		if budget.Err() != nil {
			r.deferred = true
		} else {
			vm := running[i]
			c, ok := cursors[vm.ProviderID]
			r = p.pullVM(ctx, vm, c, ok)
		}
		mu.Lock()
		defer mu.Unlock()
		s.add(r)
	})
	s.Deleted = p.deleteGone(ctx, req, list)
	p.Log.InfoContext(ctx, "access pull summary", slog.Int("vms", len(req.VMs)), slog.Int("asked", s.Asked), slog.Int("failed", s.Failed),
		slog.Int("skipped", s.Skipped), slog.Int("notNamed", s.NotNamed), slog.Int64("lines", s.Lines), slog.Int64("dropped", s.Dropped), slog.Int64("refused", s.Refused),
		slog.Int("deferred", s.Deferred), slog.Int("cursorsDeleted", s.Deleted))
	return s, nil
}

// vmResult is what the run did with one VM.
type vmResult struct {
	asked, failed, skipped  bool
	deferred, notNamed      bool
	lines, dropped, refused int64
}

func (s *Summary) add(r vmResult) {
	if r.asked {
		s.Asked++
	}
	if r.failed {
		s.Failed++
	}
	if r.skipped {
		s.Skipped++
	}
	if r.deferred {
		s.Deferred++
	}
	if r.notNamed {
		s.NotNamed++
	}
	s.Lines += r.lines
	s.Dropped += r.dropped
	s.Refused += r.refused
}

// pullVM reads one VM's lines from its cursor c (found: it has one), and
// writes the cursor as far as the lines written took it.
func (p *Puller) pullVM(ctx context.Context, vm proxy.PulledVM, c proxy.AccessCursor, found bool) (r vmResult) {
	log := p.Log.With(slog.String("provider", vm.Provider), slog.String("providerID", vm.ProviderID), slog.String("uid", vm.UID))
	reader, ok := p.Readers[vm.Provider]
	if !ok {
		log.ErrorContext(ctx, "no reader of access lines for this provider's VMs; its lines are not read")
		r.failed = true
		return r
	}
	fresh := !found || c.UID != vm.UID || !c.Named
	if fresh {
		doc, err := p.Store.ProxyOfUID(ctx, vm.UID)
		switch {
		case errors.Is(err, proxy.ErrNotFound):
			// Its proxy is gone, and the VM with it soon: nothing to
			// file its lines under.
			log.InfoContext(ctx, "VM read by pull serves no proxy document; its access lines are not read")
			r.skipped = true
			return r
		case err != nil:
			log.WarnContext(ctx, "cannot find the proxy of a VM read by pull; the next tick tries again", slog.Any("error", err))
			r.failed = true
			return r
		case !slices.Contains(doc.VMs, vm.ProviderID):
			// Not asked, so no credential goes to it, and no cursor is
			// kept: the next tick looks again.
			log.WarnContext(ctx, "VM carries the uid of a proxy whose document does not name it as its VM (status.providerID or the one it retires); it is not asked for access lines",
				slog.String("document", doc.Key.Path()), slog.Any("documentVMs", doc.VMs))
			r.notNamed = true
			return r
		}
		after := int64(0)
		if found && c.UID == vm.UID {
			after = c.After // a cursor from before the check: its place stands
		}
		c = proxy.AccessCursor{Provider: vm.Provider, ProviderID: vm.ProviderID, UID: vm.UID, Namespace: doc.Key.Namespace, Name: doc.Key.Name,
			AccessLog: doc.AccessLog, After: after, Named: true}
		if !doc.AccessLog {
			// Kept, so the next ticks do not look again.
			if err := p.Store.PutAccessCursor(ctx, c); err != nil {
				log.WarnContext(ctx, "cannot write a VM's access cursor", slog.Any("error", err))
			}
		}
	}
	if !c.AccessLog {
		r.skipped = true
		return r
	}
	log = log.With(slog.String("document", proxy.Key{Namespace: c.Namespace, Name: c.Name}.Path()))
	r.asked = true
	labels := callhome.Labels{UID: c.UID, Namespace: c.Namespace, Name: c.Name, Provider: vm.Provider,
		Instance: vmidentity.Instance{Name: vm.ProviderID, ID: vm.ProviderID, Zone: vm.Zone}}
	start := c.After
	err := p.read(ctx, log, reader, vm, &c, labels, &r)
	if err != nil {
		r.failed = true
		log.WarnContext(ctx, "cannot read a VM's access lines; the next tick tries again", slog.Int64("after", c.After), slog.Any("error", err))
	}
	if c.After == start && !fresh {
		return r
	}
	if err := p.Store.PutAccessCursor(ctx, c); err != nil {
		// The lines are written; the next tick writes them again.
		r.failed = true
		log.WarnContext(ctx, "cannot write a VM's access cursor; its last lines will be written again", slog.Int64("after", c.After), slog.Any("error", err))
	}
	return r
}

// read reads pages after c.After while they come back full, writes each
// page's lines and moves c.After past them.
func (p *Puller) read(ctx context.Context, log *slog.Logger, reader Reader, vm proxy.PulledVM, c *proxy.AccessCursor, labels callhome.Labels, r *vmResult) error {
	for range cmp.Or(p.MaxPages, DefaultMaxPages) {
		page, err := reader.Access(ctx, vm.IP, vm.Port, vm.UID, vm.StatusID, c.After)
		if err != nil {
			return err
		}
		if page.Dropped > 0 {
			r.dropped += page.Dropped
			log.InfoContext(ctx, "the engine dropped access lines nobody read in time", slog.Int64("dropped", page.Dropped))
		}
		lines := make([]vmconfig.AccessLine, 0, len(page.Lines))
		for _, l := range page.Lines {
			if callhome.CheckLine(l) != nil {
				r.refused++
				continue
			}
			lines = append(lines, l)
		}
		if bad := len(page.Lines) - len(lines); bad > 0 {
			log.WarnContext(ctx, "access lines dropped: not of the AccessLine contract", slog.Int("dropped", bad))
		}
		if len(lines) > 0 {
			if err := p.Sink.Write(ctx, labels, lines); err != nil {
				return err
			}
			r.lines += int64(len(lines))
		}
		c.After = page.Next
		if len(page.Lines) < vmconfig.AccessPageMax {
			return nil
		}
	}
	return nil
}

// deleteGone deletes the cursors of the VMs that a provider listed
// completely no longer lists, and returns how many it deleted.
func (p *Puller) deleteGone(ctx context.Context, req proxy.AccessPull, cursors []proxy.AccessCursor) int {
	listed := map[string]bool{}
	for _, vm := range req.VMs {
		listed[vm.ProviderID] = true
	}
	n := 0
	for _, c := range cursors {
		if listed[c.ProviderID] || !slices.Contains(req.Listed, c.Provider) {
			continue
		}
		if err := p.Store.DeleteAccessCursor(ctx, c.ProviderID); err != nil {
			p.Log.WarnContext(ctx, "cannot delete the access cursor of a VM gone; the next tick tries again",
				slog.String("provider", c.Provider), slog.String("providerID", c.ProviderID), slog.Any("error", err))
			continue
		}
		n++
	}
	return n
}

// forEach calls fn(0)…fn(n-1) with at most Parallelism calls at once.
func (p *Puller) forEach(n int, fn func(i int)) {
	var g errgroup.Group
	g.SetLimit(cmp.Or(p.Parallelism, DefaultParallelism))
	for i := range n {
		g.Go(func() error { fn(i); return nil })
	}
	g.Wait()
}
