package azurefake

import (
	"encoding/base64"

	"github.com/egress-proxies/egress/internal/vm/loopback"
)

// Serve makes the fake's VMs boot, for the local stack and its
// end-to-end test (package loopback): every public IP's address is a
// loopback address of its own, the fake settles by itself every Tick,
// and a VM whose customData (else userData) is one of package
// cloudinit's runs the proxy engine of the configuration in it on its
// NIC's public IP address, from the end of its create until its delete
// is asked. A PATCH of its userData applies the new configuration to
// the running engine in place when its operation ends, as the agent
// applies what it reads from IMDS: the engine's readiness then reports
// the new generation, and no VM is made. A Static proxy's next VM serves
// at the same address, its public IP's.
type Serve = loopback.Serve

// StartServing turns Serve on: public IPs made from now on have
// addresses of 127.0.144.0/20, apart from the mock's and the other
// fakes'. StopServing (or Close) stops the engines and the settling.
func (s *Server) StartServing(opts Serve) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.serving = loopback.Start(opts, s.Settle, "127.0.144.0/20")
}

// StopServing stops the settling and every engine.
func (s *Server) StopServing() {
	s.mu.Lock()
	serving := s.serving
	s.serving = nil
	s.mu.Unlock()
	serving.Stop()
}

// Serving reports whether a VM runs an engine.
func (s *Server) Serving(rg, name string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.serving != nil && s.serving.VMs.Serving(key(s.resourceID(rg, typeVM, name)))
}

// servedAddress is the next public address when the fake serves, ok
// false when it does not. Called with s.mu held.
func (s *Server) servedAddress() (string, bool) {
	if s.serving == nil {
		return "", false
	}
	return s.serving.Ranges[0].Next(), true
}

// boot starts a created VM's engine at its primary NIC's public IP.
// Called with s.mu held.
func (s *Server) boot(vm *resource) {
	if s.serving == nil {
		return
	}
	data := vm.customData
	if data == "" {
		data = vm.userData
	}
	text, err := base64.StdEncoding.DecodeString(data)
	if err != nil {
		return // not base64: no user-data the VM would run
	}
	id := key(vm.id)
	s.serving.VMs.Boot(id, s.publicAddress(vm), string(text))
	s.serving.VMs.Running(id)
}

// reconfigure applies a VM's new userData to its engine. An engine that
// refuses it keeps serving the old generation, which its readiness says.
// Called with s.mu held.
func (s *Server) reconfigure(vm *resource) {
	if s.serving == nil {
		return
	}
	text, err := base64.StdEncoding.DecodeString(vm.userData)
	if err != nil {
		return
	}
	_ = s.serving.VMs.Change(key(vm.id), string(text))
}

// unserve stops a VM's engine at once, as a delete cuts a VM's tunnels.
// Called with s.mu held.
func (s *Server) unserve(vm *resource) {
	if s.serving != nil {
		s.serving.VMs.Stop(key(vm.id))
	}
}

// publicAddress is the address of the public IP of a VM's primary NIC
// (its first, when none says primary), "" when it has none. Called with
// s.mu held.
func (s *Server) publicAddress(vm *resource) string {
	for _, ref := range arr(vm.props, "networkProfile", "networkInterfaces") {
		rm, _ := ref.(map[string]any)
		nic, ok := s.nics[key(str(rm, "id"))]
		if !ok {
			continue
		}
		for _, c := range arr(nic.props, "ipConfigurations") {
			cfg, _ := c.(map[string]any)
			if ip, ok := s.ips[key(str(cfg, "properties", "publicIPAddress", "id"))]; ok {
				return str(ip.props, "ipAddress")
			}
		}
	}
	return ""
}
