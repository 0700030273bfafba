package shard

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/blobleader/blobleader/worker/storage"
)

// A deposed leader's assignment write is refused by storage, not by its own
// good sense: leader A reads the assignment (learning its ETag), leader B of
// a newer term publishes, and A's write — conditioned on the ETag it read —
// fails; the blob keeps B's assignment.
func TestFencedDoc_DeposedLeadersWriteIsRefused(t *testing.T) {
	t.Parallel()
	c := newContainer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := storage.EnsureContainer(ctx, c); err != nil {
		t.Fatal(err)
	}
	l := Layout{Blob: "leader"}
	a := newFencedDoc(c, l.Assignment(), "assignment")
	b := newFencedDoc(c, l.Assignment(), "assignment")

	// 1. A (term 10) publishes the first assignment.
	if err := a.write(ctx, 10, doc(10, 1, "A")); err != nil {
		t.Fatalf("first write by A: %v", err)
	}
	// 2. B (term 11) reads it, then publishes its own.
	var got Assignment
	if term, found, err := b.read(ctx, &got); err != nil || !found || term != 10 {
		t.Fatalf("B's read: term %d found %v err %v; expected A's term 10", term, found, err)
	}
	if err := b.write(ctx, 11, doc(11, 2, "B")); err != nil {
		t.Fatalf("B's write: %v", err)
	}
	// 3. A, deposed, writes with the ETag it knows: storage refuses it, and
	// A reads back a term above its own (only the lock's record can say
	// whether that means deposed: coordinator.outranked).
	err := a.write(ctx, 10, doc(10, 2, "A"))
	var above *termAbove
	if !errors.As(err, &above) || above.found != 11 {
		t.Fatalf("expected A's write to be refused with B's term 11 read back, got %v", err)
	}
	// 4. A deposed leader that never read the blob (If-None-Match: *) is
	// refused too.
	fresh := newFencedDoc(c, l.Assignment(), "assignment")
	if err := fresh.write(ctx, 9, doc(9, 1, "C")); !errors.As(err, &above) || above.found != 11 {
		t.Fatalf("expected a blind write of term 9 to be refused with term 11 read back, got %v", err)
	}
	if term, _, err := b.read(ctx, &got); err != nil || term != 11 || got.Leader != "B" {
		t.Fatalf("expected the blob to keep B's term-11 assignment, got term %d leader %q err %v", term, got.Leader, err)
	}
}

// The coordinator of a deposed leader stops with ErrDeposed once a newer
// term has taken the lock (its record names the new leader) and published,
// and publishes nothing over it.
func TestLead_DeposedLeaderStops(t *testing.T) {
	t.Parallel()
	c := newContainer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := storage.EnsureContainer(ctx, c); err != nil {
		t.Fatal(err)
	}
	w, err := New(Config{Shards: 4, Election: testElection("old"), Container: c, Blob: "leader",
		Task: func(ctx context.Context, _ int, _ int64) error { <-ctx.Done(); return nil }})
	if err != nil {
		t.Fatal(err)
	}
	holder, term := "new", "200"
	writeRaw(t, c, "leader", nil, map[string]*string{"holder": &holder, "term": &term})
	newer := newFencedDoc(c, w.layout.Assignment(), "assignment")
	if err := newer.write(ctx, 200, &Assignment{Term: 200, Version: 7, Leader: "new", Shards: 4, Owners: make([]string, 4), Standbys: make([]string, 4)}); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- w.Lead(ctx, 100, func() bool { return true }) }()
	select {
	case err := <-done:
		if !errors.Is(err, ErrDeposed) {
			t.Fatalf("expected Lead of term 100 to end with ErrDeposed, got %v", err)
		}
	case <-ctx.Done():
		t.Fatal("Lead of a deposed term did not stop within 30s")
	}
	var got Assignment
	if term, _, err := newer.read(ctx, &got); err != nil || term != 200 || got.Leader != "new" {
		t.Fatalf("expected the term-200 assignment to stand, got term %d leader %q err %v", term, got.Leader, err)
	}
}

// The leader re-reads the assignment only when the listing shows an ETag
// other than the one it last wrote: the listing and the write must name the
// same ETag the same way (the header quotes it, the listing does not).
func TestListPool_ShowsTheAssignmentETagTheLeaderWrote(t *testing.T) {
	t.Parallel()
	c := newContainer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := storage.EnsureContainer(ctx, c); err != nil {
		t.Fatal(err)
	}
	l := Layout{Blob: "leader"}
	d := newFencedDoc(c, l.Assignment(), "assignment")
	if err := d.write(ctx, 10, doc(10, 1, "A")); err != nil {
		t.Fatal(err)
	}
	st, err := listPool(ctx, c, l, 4)
	if err != nil {
		t.Fatal(err)
	}
	if !d.is(st.AssignmentETag) {
		t.Fatalf("the listing shows ETag %q, the write returned %q: the leader would re-read the assignment on every pass", st.AssignmentETag, d.etag)
	}
}

// doc is a valid one-shard assignment (the reader checks its rules).
func doc(term, version int64, leader string) *Assignment {
	return &Assignment{Term: term, Version: version, Leader: leader, Shards: 1, Members: []string{leader}, Owners: []string{leader}, Standbys: []string{""}}
}
