package mutex

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/blobleader/blobleader/worker/election/electiontest"
)

// These tests drive a holding's renewals (package renewal's machine) on
// electiontest's in-memory lease, in a synctest bubble: its clock is exact,
// so each test states the instant a holding must end, not a margin. The
// tests against Azurite (mutex_test.go) check the same holding end to end.

var errBusy = errors.New("503 ServerBusy (injected)")

// fakeHolding is a holding granted at the bubble's now on an in-memory lease.
type fakeHolding struct {
	h     *Held
	store *electiontest.Store
	lock  *electiontest.Lock
	t0    time.Time // the acquire's send
}

// holdFake grants a holding of cfg's timing on a fresh in-memory lease.
// Call inside a bubble.
func holdFake(t *testing.T, cfg Config) fakeHolding {
	t.Helper()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	store := electiontest.NewStore()
	lk := store.NewLock("a")
	ls := Lease{Resource: "r", ID: "00000000-0000-0000-0000-00000000000a", Owner: cfg.Owner}
	t0 := time.Now()
	if err := lk.Acquire(context.Background(), ls.ID, cfg.LeaseDuration); err != nil {
		t.Fatal(err)
	}
	h, err := (&Locker{cfg: cfg, log: cfg.Logger}).holdOn(context.Background(), lk, ls, Grant{Term: 1, Sent: t0})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Unlock(context.Background()) })
	return fakeHolding{h: h, store: store, lock: lk, t0: t0}
}

// onRenew makes every renew of the holding do do instead of (nil: before)
// reaching the store.
func (f fakeHolding) onRenew(do func(ctx context.Context) error) {
	f.lock.SetFault(func(ctx context.Context, op string) error {
		if op != "renew" {
			return nil
		}
		return do(ctx)
	})
}

// endsAt waits for the holding to end and fails unless it ended at want
// (after t0) with an error matching ErrLost.
func (f fakeHolding) endsAt(t *testing.T, want time.Duration) {
	t.Helper()
	select {
	case <-f.h.Done():
	case <-time.After(want + time.Minute):
		t.Fatalf("the holding still lasts %v after its acquire was sent, want it ended at %v", time.Since(f.t0), want)
	}
	if got := time.Since(f.t0); got != want {
		t.Errorf("the holding ended %v after its acquire was sent, want %v", got, want)
	}
	if err := f.h.Err(); !errors.Is(err, ErrLost) {
		t.Errorf("Err() = %v, want ErrLost", err)
	}
	if f.h.Valid() {
		t.Error("Valid() after the holding ended")
	}
}

// A renew answered late extends the holding from its send, not from its
// answer: the lease at storage was extended no later than the send.
func TestHeld_RenewMovesTheDeadlineFromTheSend(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := DefaultConfig("a")
		const slow = 1500 * time.Millisecond
		f := holdFake(t, cfg)
		f.onRenew(func(ctx context.Context) error {
			select {
			case <-time.After(slow):
			case <-ctx.Done():
			}
			return nil
		})
		time.Sleep(cfg.RenewInterval + slow) // the first renew, answered
		synctest.Wait()
		if got, want := f.h.ValidUntil().Sub(f.t0), cfg.RenewInterval+cfg.RenewDeadline; got != want {
			t.Fatalf("after a renew sent at %v and answered %v later, ValidUntil is acquire + %v, want the send + RenewDeadline = acquire + %v",
				cfg.RenewInterval, slow, got, want)
		}
	})
}

// A renew that hangs does not hold the end back: each request's context
// ends by the holding's deadline, and even a request that ignores its
// context (a stuck connection) neither delays the end at the deadline nor
// keeps the renew loop past one request timeout more.
func TestHeld_HungRenewDoesNotDelayTheEnd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := DefaultConfig("a")
		cfg.RenewInterval = 3 * time.Second // request timeout 3s: the renew sent at 9s would outlive the deadline at 10s
		f := holdFake(t, cfg)
		var mu sync.Mutex
		var late []time.Duration
		stuck := make(chan struct{}) // the last renew ignores its context until the test ends
		defer close(stuck)
		f.onRenew(func(ctx context.Context) error {
			if dl, ok := ctx.Deadline(); !ok || dl.After(f.t0.Add(cfg.RenewDeadline)) {
				mu.Lock()
				late = append(late, time.Since(f.t0))
				mu.Unlock()
			}
			if time.Since(f.t0) < 3*cfg.RenewInterval {
				<-ctx.Done()
			} else {
				<-stuck
			}
			return ctx.Err()
		})
		f.endsAt(t, cfg.RenewDeadline)
		<-f.h.exited
		if got, bound := time.Since(f.t0), cfg.RenewDeadline+cfg.RequestTimeout(); got > bound {
			t.Errorf("the renew loop returned %v after the acquire, want by the deadline + a request timeout (%v)", got, bound)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(late) > 0 {
			t.Errorf("renews sent at %v ran on a context that outlives the holding's deadline (%v)", late, cfg.RenewDeadline)
		}
		if n := f.lock.Calls("renew"); n != 3 {
			t.Errorf("%d renews, want one per interval (3s, 6s, 9s) while each hangs", n)
		}
	})
}

// With every renew failing transiently, the holding lasts exactly until the
// deadline, then ends as lost and gives the lease up (it may still be ours).
func TestHeld_DeadlinePassingEndsWithErrLost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := DefaultConfig("a")
		f := holdFake(t, cfg)
		f.onRenew(func(context.Context) error { return errBusy })
		f.endsAt(t, cfg.RenewDeadline)
		<-f.h.exited
		if n := f.lock.Calls("release"); n != 1 {
			t.Errorf("%d releases after the deadline passed, want 1 (the lease may still be ours)", n)
		}
		if err := f.store.NewLock("b").Acquire(context.Background(), "00000000-0000-0000-0000-00000000000b", cfg.LeaseDuration); err != nil {
			t.Errorf("another holder cannot take the lock after the lapsed holding gave it up: %v", err)
		}
	})
}

// A definite loss (the lease broken) ends the holding at the renew that
// learns of it, long before its deadline, and nothing is released.
func TestHeld_DefiniteLossEndsAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := DefaultConfig("a")
		f := holdFake(t, cfg)
		time.Sleep(cfg.RenewInterval + time.Second) // one renew, then the break
		f.store.Break()
		f.endsAt(t, 2*cfg.RenewInterval)
		<-f.h.exited
		if got := time.Since(f.t0); got != 2*cfg.RenewInterval {
			t.Errorf("the renew loop returned %v after the acquire, want with the loss at %v", got, 2*cfg.RenewInterval)
		}
		if n := f.lock.Calls("release"); n != 0 {
			t.Errorf("%d releases of a broken lease, want none", n)
		}
		if err := f.h.Unlock(context.Background()); !errors.Is(err, ErrLost) {
			t.Errorf("Unlock after the loss = %v, want ErrLost", err)
		}
	})
}

// Unlock ends the holding at once and releases the lease, even with a
// renew hanging in flight.
func TestHeld_UnlockEndsAtOnceWithARenewInFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := DefaultConfig("a")
		f := holdFake(t, cfg)
		f.onRenew(func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() })
		time.Sleep(cfg.RenewInterval + time.Second) // a renew hangs
		t1 := time.Now()
		if err := f.h.Unlock(context.Background()); err != nil {
			t.Fatalf("Unlock: %v", err)
		}
		if got := time.Since(t1); got != 0 {
			t.Errorf("Unlock took %v with a renew in flight, want no wait", got)
		}
		if err := f.h.Err(); !errors.Is(err, ErrUnlocked) {
			t.Errorf("Err() = %v, want ErrUnlocked", err)
		}
		if n := f.lock.Calls("release"); n != 1 {
			t.Errorf("%d releases, want 1", n)
		}
	})
}
