package mutex_test

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/blobleader/blobleader/worker/mutex"
	"github.com/blobleader/blobleader/worker/stalltest"
)

func TestLocker_TryLockNamesTheHolderAndTermsIncrease(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t, 30*time.Second)
	c := newContainer(t, nil)
	a, b := newLocker(t, c, "a"), newLocker(t, c, "b")

	ha, err := a.TryLock(ctx, "customer-42")
	if err != nil {
		t.Fatalf("first TryLock: %v", err)
	}
	_, err = b.TryLock(ctx, "customer-42")
	var le *mutex.LockedError
	if !errors.Is(err, mutex.ErrLocked) || !errors.As(err, &le) || le.Holder != "a" || le.Term != ha.Term() {
		t.Fatalf("TryLock of a held lock = %v, want a LockedError naming a, term %d", err, ha.Term())
	}
	if _, err := b.TryLock(ctx, "customer-43"); err != nil {
		t.Fatalf("another resource is another lock: %v", err)
	}
	if err := ha.Unlock(ctx); err != nil {
		t.Fatalf("Unlock: %v", err)
	}
	select {
	case <-ha.Done():
	default:
		t.Fatal("Done is open after Unlock")
	}
	if !errors.Is(ha.Err(), mutex.ErrUnlocked) || ha.Valid() {
		t.Fatalf("after Unlock: Err %v, Valid %v; want ErrUnlocked, false", ha.Err(), ha.Valid())
	}
	hb, err := b.TryLock(ctx, "customer-42")
	if err != nil {
		t.Fatalf("TryLock after the unlock: %v", err)
	}
	if hb.Term() <= ha.Term() {
		t.Fatalf("terms went %d then %d: must strictly increase", ha.Term(), hb.Term())
	}
	if st, err := a.Read(ctx, "customer-42"); err != nil || !st.Locked || st.Holder != "b" || st.Term != hb.Term() {
		t.Fatalf("Read = %+v, %v; want locked by b at term %d", st, err, hb.Term())
	}
	_ = hb.Unlock(ctx)
	if st, err := a.Read(ctx, "customer-42"); err != nil || st.Locked {
		t.Fatalf("Read after the unlock = %+v, %v; want not locked", st, err)
	}
}

// Terms survive the deletion of the lock blob's container, as the
// election's do (the term floor).
func TestLocker_TermsSurviveContainerDeletion(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t, 30*time.Second)
	c := newContainer(t, nil)
	l := newLocker(t, c, "a")
	h1, err := l.TryLock(ctx, "r")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Delete(ctx, nil); err != nil {
		t.Fatal(err)
	}
	select { // the next renew finds the blob gone: a definite loss
	case <-h1.Done():
	case <-time.After(2*mutex.DefaultConfig("a").RenewInterval + 3*time.Second):
		t.Fatal("the holding outlived its deleted blob by more than two renew intervals")
	}
	if !errors.Is(h1.Err(), mutex.ErrLost) {
		t.Fatalf("Err = %v, want ErrLost", h1.Err())
	}
	h2, err := l.Lock(ctx, "r") // Azurite may refuse a new container for a moment
	if err != nil {
		t.Fatal(err)
	}
	defer h2.Unlock(ctx)
	if h2.Term() <= h1.Term() {
		t.Fatalf("term after the deletion %d ≤ %d before it", h2.Term(), h1.Term())
	}
}

// Lock waits for the holder's unlock and takes the lock at its next poll.
func TestLocker_LockTakesTheLockWithinAPollOfTheUnlock(t *testing.T) {
	t.Parallel()
	stalltest.Run(t, func(t *testing.T, p *stalltest.Probe) {
		ctx := ctxT(t, 30*time.Second)
		c := newContainer(t, nil)
		a, b := newLocker(t, c, "a"), newLocker(t, c, "b")
		ha, err := a.TryLock(ctx, "job")
		if err != nil {
			t.Fatal(err)
		}
		got := make(chan *mutex.Held, 1)
		go func() {
			h, err := b.Lock(ctx, "job")
			if err != nil {
				t.Errorf("Lock: %v", err)
			}
			got <- h
		}()
		time.Sleep(1500 * time.Millisecond) // b polls at least once while a holds
		unlocked := time.Now()
		if err := ha.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
		hb := <-got
		if hb == nil {
			return
		}
		defer hb.Unlock(ctx)
		cfg := mutex.DefaultConfig("b")
		bound := time.Duration(1.1*float64(cfg.RetryPeriod)) + cfg.RequestTimeout()
		if !p.Bound(t, "b taking the lock after the unlock (bound 1.1·P + request timeout)", unlocked, bound, time.Now()) {
			return
		}
		if hb.Term() <= ha.Term() {
			t.Fatalf("terms %d then %d", ha.Term(), hb.Term())
		}
	})
}

// A holding renews past its lease duration, and nobody else takes it.
func TestHeld_RenewsPastTheLease(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t, 60*time.Second)
	c := newContainer(t, nil)
	a, b := newLocker(t, c, "a"), newLocker(t, c, "b")
	cfg := mutex.DefaultConfig("a")
	ha, err := a.TryLock(ctx, "long")
	if err != nil {
		t.Fatal(err)
	}
	end := time.Now().Add(cfg.LeaseDuration + 2*time.Second)
	for time.Now().Before(end) {
		if _, err := b.TryLock(ctx, "long"); !errors.Is(err, mutex.ErrLocked) {
			t.Fatalf("TryLock while a renews = %v, want ErrLocked", err)
		}
		if !ha.Valid() {
			t.Fatalf("a stopped holding: %v", ha.Err())
		}
		time.Sleep(cfg.RetryPeriod)
	}
	if left := time.Until(ha.ValidUntil()); left <= 0 || left > cfg.RenewDeadline {
		t.Fatalf("valid for %s more, want within (0, D = %s]", left, cfg.RenewDeadline)
	}
	if err := ha.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}

// switchable fails every request while off is set, as storage a holder
// cannot reach.
type switchable struct{ off atomic.Bool }

func (s *switchable) Do(r *http.Request) (*http.Response, error) {
	if s.off.Load() {
		return nil, errors.New("unreachable (test)")
	}
	return http.DefaultTransport.RoundTrip(r)
}

// A holder cut off from storage stops believing at its deadline (the send of
// its last successful renew + D), before the lease can expire and anyone
// else could take it.
func TestHeld_CutOffHolderStopsBelievingBeforeTheLeaseExpires(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t, 60*time.Second)
	sw := &switchable{}
	a := newLocker(t, newContainer(t, sw), "a")
	cfg := mutex.DefaultConfig("a")
	ha, err := a.TryLock(ctx, "cut")
	if err != nil {
		t.Fatal(err)
	}
	sw.off.Store(true)
	cut := time.Now()
	lastValid := ha.ValidUntil()
	select {
	case <-ha.Done():
	case <-time.After(cfg.RenewDeadline + cfg.RenewInterval + time.Second):
		t.Fatal("a cut-off holder still believed it held past its deadline")
	}
	ended := time.Now()
	if !errors.Is(ha.Err(), mutex.ErrLost) {
		t.Fatalf("Err = %v, want ErrLost", ha.Err())
	}
	// It ended at its deadline as known when cut off, or later by at most
	// one renew that was already in flight, and before the lease could
	// expire: the deadline's send + L.
	if ended.Before(lastValid) || ended.After(lastValid.Add(cfg.RenewInterval+time.Second)) {
		t.Fatalf("ended %s after the cut, deadline %s after it", ended.Sub(cut), lastValid.Sub(cut))
	}
	if latest := lastValid.Add(cfg.LeaseDuration - cfg.RenewDeadline - time.Second); !ended.Before(latest) {
		t.Fatalf("ended %s after the cut: not before the lease could expire", ended.Sub(cut))
	}
}

// The stateless operations: another process renews or releases a holding by
// its lease ID; a different lease ID is another's; a late release made for an
// earlier holding of the same lease ID (with its term) frees nothing.
func TestLocker_StatelessReleaseActsOnlyOnItsOwnHolding(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t, 30*time.Second)
	c := newContainer(t, nil)
	granter, other := newLocker(t, c, "svc-1"), newLocker(t, c, "svc-2")
	ls := mutex.Lease{Resource: "acct/42", ID: uuid.NewString(), Owner: "vader"}
	stranger := mutex.Lease{Resource: "acct/42", ID: uuid.NewString(), Owner: "luke"}

	if err := other.Release(ctx, ls, 0); !errors.Is(err, mutex.ErrNotHeld) {
		t.Fatalf("release of a lock never taken = %v, want ErrNotHeld", err)
	}
	g1, err := granter.Acquire(ctx, ls, 15*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.Acquire(ctx, stranger, 15*time.Second); !errors.Is(err, mutex.ErrLocked) {
		t.Fatalf("acquire by another lease = %v, want ErrLocked", err)
	}
	if err := other.Release(ctx, stranger, 0); !errors.Is(err, mutex.ErrNotOwner) {
		t.Fatalf("release by another lease = %v, want ErrNotOwner", err)
	}
	if err := other.Renew(ctx, ls, g1.Term); err != nil {
		t.Fatalf("renew by another process with the lease ID and term: %v", err)
	}
	if err := other.Release(ctx, ls, g1.Term); err != nil {
		t.Fatalf("release with the term: %v", err)
	}
	g2, err := granter.Acquire(ctx, ls, 15*time.Second) // the same lease ID again: a later holding
	if err != nil || g2.Term <= g1.Term {
		t.Fatalf("re-acquire = %+v, %v; want a term above %d", g2, err, g1.Term)
	}
	for _, op := range []struct {
		name string
		do   func() error
	}{
		{"release", func() error { return other.Release(ctx, ls, g1.Term) }},
		{"renew", func() error { return other.Renew(ctx, ls, g1.Term) }},
	} {
		if err := op.do(); !errors.Is(err, mutex.ErrNotOwner) {
			t.Fatalf("late %s with the ended holding's term = %v, want ErrNotOwner", op.name, err)
		}
	}
	if st, err := other.Read(ctx, "acct/42"); err != nil || !st.Locked || st.Term != g2.Term {
		t.Fatalf("after the late release: %+v, %v; want still locked at term %d", st, err, g2.Term)
	}
	if err := other.Release(ctx, ls, g2.Term); err != nil {
		t.Fatalf("release with the current term: %v", err)
	}
	if err := other.Release(ctx, ls, g2.Term); !errors.Is(err, mutex.ErrNotHeld) {
		t.Fatalf("second release = %v, want ErrNotHeld", err)
	}
}

func TestLocker_LockEndsWithItsContext(t *testing.T) {
	t.Parallel()
	c := newContainer(t, nil)
	a, b := newLocker(t, c, "a"), newLocker(t, c, "b")
	ha, err := a.TryLock(ctxT(t, 10*time.Second), "x")
	if err != nil {
		t.Fatal(err)
	}
	defer ha.Unlock(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), 2500*time.Millisecond)
	defer cancel()
	if h, err := b.Lock(ctx, "x"); !errors.Is(err, context.DeadlineExceeded) || h != nil {
		t.Fatalf("Lock on a held lock until ctx ends = %v, %v; want DeadlineExceeded", h, err)
	}
}

// A lease that already holds the lock is refused like any other holder:
// Dapr's stores answer a second lock by the same owner false. Of
// concurrent acquires with one lease ID, exactly one is granted.
func TestLocker_AcquireRefusesALeaseThatAlreadyHolds(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t, 30*time.Second)
	c := newContainer(t, nil)
	l := newLocker(t, c, "svc")
	ls := mutex.Lease{Resource: "order-7", ID: uuid.NewString(), Owner: "vader"}
	g, err := l.Acquire(ctx, ls, 15*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Acquire(ctx, ls, 15*time.Second); !errors.Is(err, mutex.ErrLocked) {
		t.Fatalf("second acquire by the holding lease = %v, want ErrLocked", err)
	}
	if st, err := l.Read(ctx, "order-7"); err != nil || st.Term != g.Term {
		t.Fatalf("after the refused acquire: %+v, %v; want the term %d unchanged", st, err, g.Term)
	}
	// Concurrent acquires with one lease ID, on a fresh blob and on one
	// that exists: one grant each time.
	for _, res := range []string{"fresh-1", "order-7"} {
		if res == "order-7" {
			if err := l.Release(ctx, ls, g.Term); err != nil {
				t.Fatal(err)
			}
		}
		same := mutex.Lease{Resource: res, ID: uuid.NewString(), Owner: "vader"}
		var granted atomic.Int32
		errs := make(chan error, 6)
		for range 6 {
			go func() {
				_, err := l.Acquire(ctx, same, 15*time.Second)
				if err == nil {
					granted.Add(1)
				}
				errs <- err
			}()
		}
		for range 6 {
			if err := <-errs; err != nil && !errors.Is(err, mutex.ErrLocked) {
				t.Fatalf("%s: concurrent acquire: %v", res, err)
			}
		}
		if n := granted.Load(); n != 1 {
			t.Fatalf("%s: %d of 6 concurrent acquires with one lease ID were granted, want exactly 1", res, n)
		}
	}
}
