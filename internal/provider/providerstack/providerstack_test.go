package providerstack

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestNewStartsTheFakeOnceAndHandsItToTheFlow: a Cloud of New starts its
// fake once, at Start, returns the fake's variables, and its flow drives
// that fake, the one started, however often it runs.
func TestNewStartsTheFakeOnceAndHandsItToTheFlow(t *testing.T) {
	type fake struct{ id int }
	started := 0
	var flown []int
	c := New("cloud", "Cloud", func(*testing.T) (*fake, []string) {
		started++
		return &fake{id: started}, []string{"CLOUD_ENDPOINT=http://127.0.0.1:1"}
	}, func(_ *testing.T, _ Stack, f *fake) { flown = append(flown, f.id) })
	env, flow := c.Start(t)
	flow(t, nil)
	flow(t, nil)
	type got struct {
		Type, Name string
		Env        []string
		Started    int
		Flown      []int
	}
	want := got{Type: "cloud", Name: "Cloud", Env: []string{"CLOUD_ENDPOINT=http://127.0.0.1:1"}, Started: 1, Flown: []int{1, 1}}
	if diff := cmp.Diff(want, got{c.Type(), c.Name(), env, started, flown}); diff != "" {
		t.Errorf("the Cloud of New (-want +got):\n%s", diff)
	}
}
