// Package loopback boots the VMs of a cloud's fake on this machine, for
// the local stack and its end-to-end test, as the mock's MOCK_SERVE does
// for its own: a VM whose user-data is one of package cloudinit's runs the
// proxy engine of the configuration in it, on a loopback address of its
// own, from its create until its delete. So a provider asks the real
// engine for the status through the proxy port, with the status credential
// of the real user-data (package vmstatus), and a Ready proxy's proxyURL
// carries a request. What a fake's VM does not run is the bootstrap
// script: the installation, the kernel filter and the agent's self-test
// are the image test's (internal/vm/imagetest); here the engine's
// readiness is its VM running, which the fake says (Running).
//
// The Hetzner, EC2, DigitalOcean and Azure fakes use it alike; each hands
// out the addresses of ranges of its own (Range), apart from the mock's
// (127.0.16.0/20, 127.0.32.0/20). A fake whose VMs' user data changes in
// place (Azure's) applies the change to the running engine
// (Change), as the VM's agent would.
package loopback

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/egress-proxies/egress/internal/bootstrap"
	"github.com/egress-proxies/egress/internal/bootstrap/cloudinit"
	"github.com/egress-proxies/egress/internal/vm/engine"
	"github.com/egress-proxies/egress/internal/vm/vmconfig"
)

// Serve is how a fake's VMs boot.
type Serve struct {
	// AllowDestinations are exceptions to the engine's deny list, which
	// refuses loopback: the local test targets.
	AllowDestinations []string
	// Tick is how often the fake settles (Start); zero is a second.
	Tick time.Duration
	// Log receives the engines' lines; nil discards them.
	Log *slog.Logger
}

// Serving is a fake's VMs booting: their engines, the loopback ranges
// the fake hands their addresses from, and the fake's settling.
type Serving struct {
	VMs    *VMs
	Ranges []*Range
	stop   func()
}

// Start turns serving on for a fake: its VMs (New), a Range of each of
// ranges, and settle called every opts.Tick, as a cloud finishes what it
// has begun by itself.
func Start(opts Serve, settle func(), ranges ...string) *Serving {
	s := &Serving{VMs: New(opts), stop: Settling(opts.Tick, settle)}
	for _, r := range ranges {
		s.Ranges = append(s.Ranges, NewRange(r))
	}
	return s
}

// Stop stops the settling and every engine; a nil Serving has nothing
// to stop.
func (s *Serving) Stop() {
	if s == nil {
		return
	}
	s.stop()
	s.VMs.StopAll()
}

// VMs are the running engines of a fake's VMs, by the fake's id of each.
// Its methods are safe for concurrent use, and call nothing of the fake's,
// so a fake may call them with its own lock held.
type VMs struct {
	opts Serve

	mu  sync.Mutex
	vms map[string]*vm
}

// vm is a VM's running engine.
type vm struct {
	server  *engine.Server
	running atomic.Bool
	// generation is the configuration's the engine serves, which its
	// readiness reports: the boot's, then a Change's.
	generation atomic.Int64
	listen     string
}

// New makes the VMs of a fake.
func New(opts Serve) *VMs {
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	return &VMs{opts: opts, vms: map[string]*vm{}}
}

// Boot starts the engine of a new VM at ip, when its user-data is one of
// package cloudinit's (a VM of another tool serves nothing). A VM whose
// engine cannot start (its address's port is taken, by another local
// stack) serves nothing, and is logged: it never becomes Ready, as a VM
// that failed its boot.
func (v *VMs) Boot(id, ip, userData string) {
	if userData == "" || ip == "" {
		return
	}
	log := v.opts.Log.With(slog.String("vm", id))
	boot, err := cloudinit.Parse(userData)
	if err != nil {
		return // not the proxy's user-data: a VM of another tool
	}
	cfg, err := boot.Engine()
	if err != nil {
		log.Warn("the VM's user-data carries no engine configuration", slog.Any("error", err))
		return
	}
	_, port, err := net.SplitHostPort(cfg.Listen)
	if err != nil {
		log.Warn("the VM's engine configuration has no port", slog.Any("error", err))
		return
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(ip, port))
	if err != nil {
		log.Warn("the VM's engine cannot listen on its address", slog.Any("error", err))
		return
	}
	cfg = onLoopback(cfg, ln.Addr().String(), v.opts.AllowDestinations)
	sv := &vm{listen: cfg.Listen}
	sv.generation.Store(cfg.Generation)
	// A VM told to run its cloud's part for a static address (a Static
	// proxy's Droplet: the setting egress-follow) says its traffic leaves from
	// the address it is served at, as its agent says once it routed
	// through it: a stand-in on loopback has one address, which the fake
	// moves to the reserved IP once it is assigned.
	egress := ""
	if boot.Setting(vmconfig.KeyFollow) != "" {
		egress = ip
	}
	eng, err := engine.New(cfg, engine.Options{Log: log, Readiness: func() vmconfig.Readiness {
		return vmconfig.Readiness{Generation: sv.generation.Load(), Ready: sv.running.Load(), Egress: egress}
	}})
	if err != nil {
		ln.Close()
		log.Warn("the VM's engine refuses its configuration", slog.Any("error", err))
		return
	}
	sv.server = eng
	v.mu.Lock()
	v.vms[id] = sv
	v.mu.Unlock()
	go func() {
		if err := eng.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Warn("the VM's engine stopped", slog.Any("error", err))
		}
	}()
}

// Change applies, in place, the engine's configuration of a VM's new
// user-data, as the VM's agent applies a change of a user data that
// changes without a reboot (Azure's userData: agent.UserDataWatch): the
// running engine takes it, keeping the tunnels it still allows, and the
// readiness says its generation from then on. A user-data of the
// generation served changes nothing; one that is not package cloudinit's,
// or whose configuration the engine refuses, changes nothing either and
// is the error, as the agent refuses it. A VM that serves nothing (none
// booted, or deleted) is not changed: nil.
func (v *VMs) Change(id, userData string) error {
	v.mu.Lock()
	sv := v.vms[id]
	v.mu.Unlock()
	if sv == nil {
		return nil
	}
	boot, err := cloudinit.Parse(userData)
	if err != nil {
		return fmt.Errorf("VM %s: the new user-data is not the proxy's: %w", id, err)
	}
	cfg, err := boot.Engine()
	if err != nil {
		return fmt.Errorf("VM %s: the new user-data carries no engine configuration: %w", id, err)
	}
	if cfg.Generation == sv.generation.Load() {
		return nil
	}
	if err := sv.server.Apply(onLoopback(cfg, sv.listen, v.opts.AllowDestinations)); err != nil {
		v.opts.Log.Warn("the VM's engine refuses its new configuration", slog.String("vm", id), slog.Any("error", err))
		return fmt.Errorf("VM %s: the engine refuses the new configuration: %w", id, err)
	}
	sv.generation.Store(cfg.Generation)
	return nil
}

// onLoopback is cfg as a VM of a fake runs it, on listen: its SOCKS5 port
// on the same address, no counters served (every engine would want the
// same port), the self-test's sources that lead the ranges dropped (the
// spec's ranges alone decide on a developer's machine), and allow
// excepted from the deny list.
func onLoopback(cfg vmconfig.Config, listen string, allow []string) vmconfig.Config {
	if self := bootstrap.SelfTestSources; len(cfg.AllowedSourceRanges) >= len(self) && slices.Equal(cfg.AllowedSourceRanges[:len(self)], self) {
		cfg.AllowedSourceRanges = cfg.AllowedSourceRanges[len(self):]
	}
	cfg.StatsListen = ""
	host, _, _ := net.SplitHostPort(listen)
	if _, port, err := net.SplitHostPort(cfg.Socks5Listen); err == nil {
		cfg.Socks5Listen = net.JoinHostPort(host, port)
	}
	cfg.Listen = listen
	cfg.AllowDestinations = slices.Concat(cfg.AllowDestinations, allow)
	return cfg
}

// Running marks a VM's engine ready: its VM runs.
func (v *VMs) Running(id string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if sv := v.vms[id]; sv != nil {
		sv.running.Store(true)
	}
}

// Stop stops a VM's engine at once, as a deletion cuts a VM's tunnels.
func (v *VMs) Stop(id string) {
	v.mu.Lock()
	sv := v.vms[id]
	delete(v.vms, id)
	v.mu.Unlock()
	if sv == nil {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	sv.server.Shutdown(ctx)
}

// StopAll stops every engine.
func (v *VMs) StopAll() {
	v.mu.Lock()
	ids := make([]string, 0, len(v.vms))
	for id := range v.vms {
		ids = append(ids, id)
	}
	v.mu.Unlock()
	for _, id := range ids {
		v.Stop(id)
	}
}

// Serving reports whether a VM runs an engine.
func (v *VMs) Serving(id string) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.vms[id] != nil
}

// Range hands out the addresses of a loopback block in turn, past its
// first and its last, wrapping around. It is not safe for concurrent
// use: a fake calls it with its own lock held.
type Range struct {
	prefix netip.Prefix
	next   int
}

// NewRange is the range of a prefix such as 127.0.48.0/20.
func NewRange(prefix string) *Range { return &Range{prefix: netip.MustParsePrefix(prefix)} }

// Next is the range's next address.
func (r *Range) Next() string {
	r.next++
	size := 1 << (32 - r.prefix.Bits())
	n := r.next%(size-2) + 1
	a := r.prefix.Addr().As4()
	m := int(a[2])<<8 | int(a[3]) + n
	a[2], a[3] = byte(m>>8), byte(m)
	return netip.AddrFrom4(a).String()
}

// Settling calls settle every tick (a second when zero), as a cloud
// finishes what it has begun by itself, until the returned stop is
// called.
func Settling(tick time.Duration, settle func()) (stop func()) {
	if tick == 0 {
		tick = time.Second
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		t := time.NewTicker(tick)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				settle()
			}
		}
	}()
	return cancel
}
