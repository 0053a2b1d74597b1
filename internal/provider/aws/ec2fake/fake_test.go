package ec2fake

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestStatesMoveAsEC2Moves: what EC2 ends stays ended (a shutting-down
// instance only terminates, a terminated one is never stopped or run
// again), and an instance that terminates, however it got there, lets
// its Elastic IP go.
func TestStatesMoveAsEC2Moves(t *testing.T) {
	s := newServer()
	run := s.Put("us-east-1", "us-east-1a", nil)
	a := s.PutAddress("us-east-1", nil)
	s.addresses[a].InstanceID, s.addresses[a].AssociationID = run, "eipassoc-1"
	s.instances[run].AllocationID = a
	going := s.Put("us-east-1", "us-east-1b", nil)
	s.instances[going].State = "shutting-down"

	s.SetState(going, "stopped")
	s.SetState(run, "terminated")
	s.SetState(run, "running")
	got := map[string]string{"running one": s.instances[run].State, "going one": s.instances[going].State, "address on": s.addresses[a].InstanceID}
	want := map[string]string{"running one": "terminated", "going one": "shutting-down", "address on": ""}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("states (-want +got):\n%s", diff)
	}
}
