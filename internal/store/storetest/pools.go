package storetest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/internal/proxy"
	"github.com/egress-proxies/egress/internal/store/rules"
)

// testPools: a PUT creates a pool, the same PUT again writes nothing, a
// new size counts a generation, a new provider or placement is refused
// naming the field; a deletion request is kept from the first; a pool
// being deleted takes no PUT; lists page by name.
func testPools(t *testing.T, s Store) {
	ctx := context.Background()
	spec := proxy.PoolSpec{Provider: "mock", Placement: proxy.Placement{Region: "us-central1", Zone: "us-central1-a"}, Size: 2}
	at := base.Add(time.Hour)
	if _, err := s.GetPool(ctx, "warm"); !errors.Is(err, proxy.ErrNotFound) {
		t.Errorf("GetPool of an absent pool: %v, want ErrNotFound", err)
	}
	readBack := func(what string, want *proxy.Pool) {
		t.Helper()
		got, err := s.GetPool(ctx, want.Name)
		if err != nil {
			t.Fatalf("%s: GetPool: %v", what, err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s: GetPool reads (-returned +get):\n%s", what, diff)
		}
	}
	created, isNew, err := s.PutPool(ctx, "warm", spec, at)
	if err != nil || !isNew {
		t.Fatalf("PutPool: %v (created %v), want a new pool", err, isNew)
	}
	want := &proxy.Pool{Name: "warm", Spec: spec, Generation: 1, CreateTime: at}
	if diff := cmp.Diff(want, created, ignoreUpdateTime); diff != "" || created.UpdateTime.IsZero() {
		t.Errorf("created pool (-want +got), update time %s:\n%s", created.UpdateTime, diff)
	}
	readBack("a created pool", created)

	again, isNew, err := s.PutPool(ctx, "warm", spec, at.Add(time.Minute))
	if err != nil || isNew || !again.UpdateTime.Equal(created.UpdateTime) || again.Generation != 1 {
		t.Errorf("the same PutPool again: %v, created %v, generation %d, update time %s after %s; want no write", err, isNew, again.Generation, again.UpdateTime, created.UpdateTime)
	}
	bigger := spec
	bigger.Size = 5
	grown, _, err := s.PutPool(ctx, "warm", bigger, at)
	if err != nil || grown.Spec.Size != 5 || grown.Generation != 2 || !grown.CreateTime.Equal(at) {
		t.Errorf("PutPool of size 5: %v, size %d generation %d create time %s; want 5, 2 and the first create time", err, grown.Spec.Size, grown.Generation, grown.CreateTime)
	}
	readBack("a grown pool", grown)

	other := bigger
	other.Provider, other.Placement.Zone = "gcp", "us-central1-b"
	_, _, err = s.PutPool(ctx, "warm", other, at)
	var fe proxy.FieldErrors
	if !errors.As(err, &fe) {
		t.Fatalf("PutPool of another provider and zone: %v, want field errors", err)
	}
	var fields []string
	for _, f := range fe {
		if f.Reason == rules.ReasonPoolFieldImmutable {
			fields = append(fields, f.Field)
		}
	}
	if diff := cmp.Diff([]string{"spec.provider", "spec.placement"}, fields); diff != "" {
		t.Errorf("the immutable fields named (-want +got):\n%s", diff)
	}
	readBack("a refused PutPool", grown)

	deleting, err := s.RequestPoolDeletion(ctx, "warm", at.Add(time.Hour))
	if err != nil || deleting.DeleteRequestTime == nil || !deleting.DeleteRequestTime.Equal(at.Add(time.Hour)) {
		t.Fatalf("RequestPoolDeletion: %v, deleteRequestTime %v", err, deleting.DeleteRequestTime)
	}
	readBack("a pool being deleted", deleting)
	if second, err := s.RequestPoolDeletion(ctx, "warm", at.Add(2*time.Hour)); err != nil || !cmp.Equal(deleting, second) {
		t.Errorf("a second RequestPoolDeletion: %v, %+v; want the first request kept and no write", err, second)
	}
	if _, _, err := s.PutPool(ctx, "warm", spec, at); !errors.Is(err, proxy.ErrBeingDeleted) {
		t.Errorf("PutPool of a pool being deleted: %v, want ErrBeingDeleted", err)
	}
	if _, err := s.RequestPoolDeletion(ctx, "absent", at); !errors.Is(err, proxy.ErrNotFound) {
		t.Errorf("RequestPoolDeletion of an absent pool: %v, want ErrNotFound", err)
	}

	var wantNames []string
	for i := range 5 {
		name := fmt.Sprintf("pool-%d", i)
		if _, _, err := s.PutPool(ctx, name, spec, at); err != nil {
			t.Fatal(err)
		}
		wantNames = append(wantNames, name)
	}
	wantNames = append(wantNames, "warm")
	var names []string
	pages := 0
	for token := ""; ; pages++ {
		page, next, err := s.ListPools(ctx, 4, token)
		if err != nil {
			t.Fatalf("ListPools page %d: %v", pages+1, err)
		}
		for _, p := range page {
			names = append(names, p.Name)
		}
		if token = next; token == "" || pages > 3 {
			break
		}
	}
	if diff := cmp.Diff(wantNames, names); diff != "" || pages != 1 {
		t.Errorf("pools listed over %d pages, want 2 (-want +got):\n%s", pages+1, diff)
	}
	if _, _, err := s.ListPools(ctx, 4, "not a token!"); !errors.Is(err, proxy.ErrInvalidPageToken) {
		t.Errorf("ListPools with a made-up token: %v, want ErrInvalidPageToken", err)
	}
}
