package chaos

import (
	"errors"
	"testing"
	"time"
)

func TestPartition_BlackholeCutsBothDirectionsUntilHealed(t *testing.T) {
	direct, px := fixtureStorage(t)
	via := containerVia(t, px.Addr(), containerNameOf(direct))
	if err := probe(ctxT(t, 5*time.Second), via); err != nil {
		t.Fatalf("baseline: %v", err)
	}

	f := &Partition{Proxy: px}
	if f.Kind() != KindPartition || f.Target() != px.Name() {
		t.Fatalf("kind %q target %q", f.Kind(), f.Target())
	}
	if err := f.Inject(ctxT(t, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := f.Inject(ctxT(t, 5*time.Second)); !errors.Is(err, ErrInjected) {
		t.Fatalf("second inject = %v, want ErrInjected", err)
	}
	// Pooled and new connections alike hang until the client gives up, and
	// nothing reaches storage.
	start := time.Now()
	if err := put(via, "cut-off", 500*time.Millisecond); err == nil {
		t.Fatal("write across a partition succeeded")
	}
	if d := time.Since(start); d < 450*time.Millisecond {
		t.Fatalf("write failed after %v, want it to hang to the client's deadline (black hole)", d)
	}
	if exists(t, direct, "cut-off") {
		t.Fatal("a write across the partition reached storage")
	}

	if err := f.Remove(ctxT(t, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := eventually(ctxT(t, 5*time.Second), via); err != nil {
		t.Fatal(err)
	}
	if err := put(via, "healed", 5*time.Second); err != nil || !exists(t, direct, "healed") {
		t.Fatalf("write after healing: %v", err)
	}
}

func TestPartition_RefuseFailsFastUntilHealed(t *testing.T) {
	direct, px := fixtureStorage(t)
	via := containerVia(t, px.Addr(), containerNameOf(direct))

	f := &Partition{Mode: Refuse, Proxy: px}
	if err := f.Inject(ctxT(t, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	if d, err := timedProbe(via, 3*time.Second); err == nil || d > time.Second {
		t.Fatalf("probe across a refusing partition: %v after %v, want a fast error", err, d)
	}
	if err := f.Remove(ctxT(t, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := eventually(ctxT(t, 5*time.Second), via); err != nil {
		t.Fatal(err)
	}
	if err := (&Partition{Mode: "flaky", Proxy: px}).Inject(ctxT(t, time.Second)); !errors.Is(err, ErrInvalid) {
		t.Fatalf("unknown mode = %v, want ErrInvalid", err)
	}
}
