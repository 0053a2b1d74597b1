package reconcile

import (
	"reflect"
	"testing"
	"time"

	"github.com/egress-proxies/egress/internal/proxy"
)

// TestEveryFieldIsAChange sets each field of the status and the bookkeeping
// in turn: every one makes a write, but for the three that ride along with
// other changes. A field added to either is compared without anyone listing
// it.
func TestEveryFieldIsAChange(t *testing.T) {
	rideAlong := map[string]bool{"Attempts": true, "ProgressTime": true, "LeaseExpireTime": true}
	base := &proxy.Proxy{Namespace: "a", Name: "b", UID: "u"}
	for _, part := range []string{"Status", "Reconciler"} {
		typ := reflect.ValueOf(base).Elem().FieldByName(part).Type()
		for i := range typ.NumField() {
			f := typ.Field(i)
			t.Run(part+"."+f.Name, func(t *testing.T) {
				next := *base
				reflect.ValueOf(&next).Elem().FieldByName(part).Field(i).Set(nonZero(t, f.Type))
				if got, want := changed(base, &next), !rideAlong[f.Name]; got != want {
					t.Errorf("changed = %v when only %s.%s differs, want %v", got, part, f.Name, want)
				}
			})
		}
	}
}

// TestSameInstantIsNoChange: a time read back from the store (UTC, to the
// microsecond) and the one the run wrote (local, with a monotonic reading)
// name the same instant and make no write.
func TestSameInstantIsNoChange(t *testing.T) {
	now := time.Now()
	old := &proxy.Proxy{Status: proxy.Status{Conditions: []proxy.Condition{{Type: "Ready", LastTransitionTime: now.UTC().Truncate(time.Microsecond)}}}}
	next := &proxy.Proxy{Status: proxy.Status{Conditions: []proxy.Condition{{Type: "Ready", LastTransitionTime: now}}}}
	old.Reconciler.BootStart, next.Reconciler.BootStart = now.UTC().Truncate(time.Microsecond), now.In(time.FixedZone("x", 3600))
	if changed(old, next) {
		t.Error("the same instants in another location and precision count as a change")
	}
	next.Status.Conditions[0].LastTransitionTime = now.Add(time.Millisecond)
	if !changed(old, next) {
		t.Error("a transition a millisecond later is no change")
	}
}

func nonZero(t *testing.T, typ reflect.Type) reflect.Value {
	t.Helper()
	v := reflect.New(typ).Elem()
	switch {
	case typ == reflect.TypeFor[time.Time]():
		v.Set(reflect.ValueOf(time.Date(2026, 12, 3, 1, 2, 3, 0, time.UTC)))
	case typ.Kind() == reflect.String:
		v.SetString("x")
	case typ.Kind() == reflect.Int64 || typ.Kind() == reflect.Int32 || typ.Kind() == reflect.Int:
		v.SetInt(1)
	case typ.Kind() == reflect.Slice:
		v.Set(reflect.MakeSlice(typ, 1, 1))
		v.Index(0).Set(nonZero(t, typ.Elem()))
	case typ.Kind() == reflect.Struct:
		v.Field(0).Set(nonZero(t, typ.Field(0).Type))
	case typ.Kind() == reflect.Pointer:
		v.Set(reflect.New(typ.Elem()))
		v.Elem().Set(nonZero(t, typ.Elem()))
	default:
		t.Fatalf("no non-zero value for %s: teach nonZero", typ)
	}
	return v
}
