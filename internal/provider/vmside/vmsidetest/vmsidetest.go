// Package vmsidetest holds doubles of the VM side (package vmside) for
// the tests of the providers that consume it, hetzner's, aws's and
// digitalocean's: a
// Prober whose answers a test sets, and a Renderer.
package vmsidetest

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/provider/vmside"
)

// Statuses is the Prober's double: what each uid's VM says when asked,
// and who was asked. A uid it has no answer for does not answer (the VM
// still boots).
type Statuses struct {
	mu     sync.Mutex
	by     map[string]vmside.Status
	routed map[string]bool
	probes []string // ip:port/uid/id
}

// NewStatuses returns a Prober no VM answers yet.
func NewStatuses() *Statuses { return &Statuses{by: map[string]vmside.Status{}} }

// Probe answers what Set said for uid, or no answer. A VM without a
// status id is asked by no real prober: it gets no answer here either.
func (s *Statuses) Probe(_ context.Context, ip string, port int32, uid, id string) (vmside.Status, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.probes = append(s.probes, fmt.Sprintf("%s:%d/%s/%s", ip, port, uid, id))
	if id == "" {
		return vmside.Status{}, fmt.Errorf("%s:%d has no status id: not asked", ip, port)
	}
	if st, ok := s.by[uid]; ok {
		if s.routed[uid] {
			st.Egress = ip
		}
		return st, nil
	}
	return vmside.Status{}, fmt.Errorf("dial tcp %s:%d: connection refused", ip, port)
}

// Set makes the VM of uid answer st from now on.
func (s *Statuses) Set(uid string, st vmside.Status) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.by[uid] = st
}

// Routed makes the VM of uid say, from now on, that its outbound
// traffic leaves from the address it is asked at (Status.Egress): a
// DigitalOcean Droplet that routes through the reserved IP it is reached
// at, as its agent does once the address is its.
func (s *Statuses) Routed(uid string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.routed == nil {
		s.routed = map[string]bool{}
	}
	s.routed[uid] = true
}

// Probes are the questions asked so far, as ip:port/uid/id.
func (s *Statuses) Probes() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.probes)
}

// Renderer is the Renderer's double: a #cloud-config that names what it
// was made from, and nothing a reader could use.
var Renderer = vmside.RendererFunc(func(req provider.CreateRequest) (string, error) {
	gen := int64(0)
	if req.Engine != nil {
		gen = req.Engine.Generation
	}
	return fmt.Sprintf("#cloud-config\n# egress proxy %s, generation %d\n", req.UID, gen), nil
})
