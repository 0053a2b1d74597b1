package store

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestKeyedLock(t *testing.T) {
	var k keyedLock
	ctx := context.Background()
	releaseA, err := k.acquire(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	// Another key is free.
	releaseB, err := k.acquire(ctx, "b")
	if err != nil {
		t.Fatalf("key b waits for key a: %v", err)
	}
	releaseB()

	// The same key waits, and gives up when its context ends.
	short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	if _, err := k.acquire(short, "a"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("second acquire of a held key: %v, want DeadlineExceeded", err)
	}

	// A waiter gets the key once it is released.
	got := make(chan func())
	go func() {
		r, err := k.acquire(ctx, "a")
		if err != nil {
			t.Error(err)
		}
		got <- r
	}()
	select {
	case <-got:
		t.Fatal("acquired a key still held")
	case <-time.After(20 * time.Millisecond):
	}
	releaseA()
	(<-got)()

	if n := len(k.slots); n != 0 {
		t.Errorf("%d slots left after every holder released, want 0", n)
	}
}
