package ec2fake

import "github.com/egress-proxies/egress/internal/vm/loopback"

// Serve makes the fake's instances boot, for the local stack and its
// end-to-end test, as the Hetzner fake's servers do (package loopback):
// every public address is a loopback address of its own (an instance's
// of 127.0.80.0/20, an Elastic IP's of 127.0.96.0/20), the fake settles
// by itself every Tick (pending instances run, shutting-down ones end),
// and an instance whose user-data is one of package cloudinit's runs the
// proxy engine of the configuration in it on its public address from
// when it runs until it stops or ends; an Elastic IP associated with it
// moves its engine to that address, as the instance's public address
// changes.
type Serve = loopback.Serve

// StartServing turns Serve on for the instances and Elastic IPs made from
// now on. StopServing (or Close) stops their engines and the settling.
func (s *Server) StartServing(opts Serve) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.serving = loopback.Start(opts, s.Settle, "127.0.80.0/20", "127.0.96.0/20")
}

// StopServing stops the settling and every engine.
func (s *Server) StopServing() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.serving.Stop()
	s.serving = nil
}

// publicIP is a new instance's public address (elastic false) or a new
// Elastic IP's: a served loopback address when the fake serves, else one
// of the benchmark ranges. Called with s.mu held.
func (s *Server) publicIP(elastic bool) string {
	switch {
	case s.serving != nil && elastic:
		return s.serving.Ranges[1].Next()
	case s.serving != nil:
		return s.serving.Ranges[0].Next()
	case elastic:
		return s.newIP("198.19")
	}
	return s.newIP("198.18")
}

// serveAt (re)starts an instance's engine on its public address, ready
// at once: the instance runs. Called with s.mu held.
func (s *Server) serveAt(in *Instance) {
	if s.serving == nil {
		return
	}
	s.serving.VMs.Stop(in.ID)
	s.serving.VMs.Boot(in.ID, in.PublicIP, in.UserData)
	s.serving.VMs.Running(in.ID)
}

// unserve stops an instance's engine at once, as a termination cuts a
// VM's tunnels. Called with s.mu held.
func (s *Server) unserve(id string) {
	if s.serving != nil {
		s.serving.VMs.Stop(id)
	}
}

// Serving reports whether an instance runs an engine.
func (s *Server) Serving(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.serving != nil && s.serving.VMs.Serving(id)
}
