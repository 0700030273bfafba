package bloblock_test

import (
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/blobleader/blobleader/worker/election/bloblock"
	"github.com/blobleader/blobleader/worker/election/lease"
)

// version reads the blob's ETag through Inspect.
func version(t *testing.T, l *bloblock.Lock) string {
	t.Helper()
	v, err := l.Inspect(ctxT(t, 10*time.Second))
	if err != nil || v.Version == "" {
		t.Fatalf("Inspect = %+v, %v; want a version", v, err)
	}
	return v.Version
}

// Lease operations leave the ETag as it was; a record write changes it.
// At's guarantee (a renew or release decided on an older read is refused)
// rests on both halves.
func TestLock_LeaseOperationsKeepTheVersion(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t, 30*time.Second)
	c, _ := newContainer(t)
	l := newLock(t, c)
	id := uuid.NewString()
	if err := l.Acquire(ctx, id, 15*time.Second); err != nil {
		t.Fatal(err)
	}
	v0 := version(t, l)
	steps := []struct {
		name string
		op   func() error
	}{
		{"acquire again", func() error { return l.Acquire(ctx, id, 15*time.Second) }},
		{"renew", func() error { return l.Renew(ctx, id) }},
		{"release", func() error { return l.Release(ctx, id) }},
		{"acquire", func() error { return l.Acquire(ctx, id, 15*time.Second) }},
	}
	for _, s := range steps {
		if err := s.op(); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if v := version(t, l); v != v0 {
			t.Fatalf("after %s the version is %s, was %s: lease operations must not change the ETag", s.name, v, v0)
		}
	}
	if err := l.Update(ctx, id, lease.Record{Holder: "a", Term: 5}); err != nil {
		t.Fatal(err)
	}
	if v := version(t, l); v == v0 {
		t.Fatalf("a record write left the version at %s: it must change the ETag", v)
	}
}

// At(version) conditions Renew and Release on the record read: after a
// record write (a later holding's term), the same lease ID at the old
// version is refused as a loss and the lease stays; at the current version
// it acts.
func TestLock_AtRefusesRenewAndReleaseOfAnOlderRecord(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t, 30*time.Second)
	c, _ := newContainer(t)
	l := newLock(t, c)
	id := uuid.NewString() // one holder's lease ID, kept across its holdings
	if err := l.Acquire(ctx, id, 15*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := l.Update(ctx, id, lease.Record{Holder: "a", Term: 5}); err != nil {
		t.Fatal(err)
	}
	old := version(t, l)
	if err := l.Update(ctx, id, lease.Record{Holder: "a", Term: 6}); err != nil { // the later holding
		t.Fatal(err)
	}
	cur := version(t, l)
	for _, tc := range []struct {
		name string
		op   func(*bloblock.Lock) error
	}{
		{"renew", func(x *bloblock.Lock) error { return x.Renew(ctx, id) }},
		{"release", func(x *bloblock.Lock) error { return x.Release(ctx, id) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.op(l.At(old))
			var se *bloblock.Error
			if !errors.Is(err, lease.ErrLost) || !errors.As(err, &se) || se.Status != 412 {
				t.Fatalf("%s at the older version = %v, want 412 wrapping ErrLockLost", tc.name, err)
			}
			if v, err := l.Inspect(ctx); err != nil || v.State != lease.Leased {
				t.Fatalf("after the refused %s the lease is %+v, %v; want it still leased", tc.name, v, err)
			}
		})
	}
	if err := l.At(cur).Renew(ctx, id); err != nil {
		t.Fatalf("renew at the current version: %v", err)
	}
	if err := l.At(cur).Release(ctx, id); err != nil {
		t.Fatalf("release at the current version: %v", err)
	}
	if v, err := l.Inspect(ctx); err != nil || v.State != lease.Available {
		t.Fatalf("after the release the lease is %+v, %v; want available", v, err)
	}
}
