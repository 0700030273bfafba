package election

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/blobleader/blobleader/worker/election/electiontest"
	"github.com/blobleader/blobleader/worker/election/lease"
)

// Tests for the safety holes of issue 10, each written to fail on the elector
// as it was, in the same synctest bubbles as elector_test.go.

// lateRelease captures the first release of a leadership whose renews hang
// and answers it with a timeout without performing it: the request is "held
// in flight". deliver performs it later, the way a proxy that held it would.
type lateRelease struct {
	mu       sync.Mutex
	captured bool
	lock     *electiontest.Lock
	id       string
}

func (l *lateRelease) fault(ctx context.Context, op string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case !l.captured && op == "renew":
		<-ctx.Done() // the first leadership's renews hang
		return ctx.Err()
	case !l.captured && op == "release":
		l.captured = true
		l.id = l.lock.LastLeaseID("release")
		return fmt.Errorf("release: %w (held in flight)", context.DeadlineExceeded)
	}
	return nil
}

// Hole 1: a late Release from an ended leadership must not end a later one.
func TestElector_LateReleaseFromAnEndedLeadershipCannotEndALaterOne(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := electiontest.NewStore()
		a := start(t, store, testConfig("a"), Callbacks{})
		synctest.Wait()
		oneLeader(t, a)
		late := &lateRelease{lock: a.lock}
		a.lock.SetFault(late.fault)
		b := start(t, store, testConfig("b"), Callbacks{})

		// a steps down at D = 10s and its release is held; the lease is still
		// live at storage until 15s, so a (after its 2·P pause) or b takes it.
		time.Sleep(13 * time.Second)
		synctest.Wait()
		if !late.captured {
			t.Fatal("no release was sent at the deadline")
		}
		// Whoever leads now, the old leadership's release arrives late.
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_ = a.lock.Release(ctx, late.id)
		cancel()
		for range 20 { // 5 s in quarter-second steps
			time.Sleep(250 * time.Millisecond)
			synctest.Wait()
			if ls := leaders(a, b); len(ls) > 1 {
				t.Fatalf("two leaders at %s after the late release: a (term %d) and b (term %d)",
					time.Now().Format(time.StampMilli), a.e.Status().Term, b.e.Status().Term)
			}
		}
	})
}

// Hole 2: terms never go backwards, even when the record is deleted (an
// operator deletes the lock blob or its container) under a running cluster.
func TestElector_TermsNeverGoBackwardsAfterTheRecordIsDeleted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := electiontest.NewStore()
		a := start(t, store, testConfig("a"), Callbacks{})
		synctest.Wait()
		b := start(t, store, testConfig("b"), Callbacks{})
		time.Sleep(3 * time.Second)
		synctest.Wait()
		oneLeader(t, a, b)
		highest := store.Record().Term
		store.Delete() // lease and record gone, as with `az storage container delete`
		time.Sleep(20 * time.Second)
		synctest.Wait()
		var terms []int64
		for _, c := range []*contender{a, b} {
			for _, ev := range c.rec.all(EventStartedLeading) {
				terms = append(terms, ev.Term)
			}
		}
		if len(terms) < 2 {
			t.Fatalf("started_leading terms %v: want a leadership after the delete", terms)
		}
		if last := terms[len(terms)-1]; last <= highest {
			t.Fatalf("leadership after the delete has term %d, not above %d handed out before (terms %v)", last, highest, terms)
		}
	})
}

// Hole 3a: the task's context is cancelled the instant leadership ends, not
// after the in-flight renew has been drained.
func TestElector_TaskCancelledAtTheDeadlineEvenIfARenewIsStillInFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := electiontest.NewStore()
		var cancelledAt time.Time
		var once sync.Once
		t0 := time.Now()
		a := start(t, store, testConfig("a"), Callbacks{OnStartedLeading: func(ctx context.Context, term int64) error {
			<-ctx.Done()
			once.Do(func() { cancelledAt = time.Now() })
			return nil
		}})
		synctest.Wait()
		oneLeader(t, a)
		// Renews take 5 s whatever their context says (a request the
		// transport cannot abort at once).
		a.lock.SetFault(func(ctx context.Context, op string) error {
			if op == "renew" {
				time.Sleep(5 * time.Second)
				return errors.New("renew: too late")
			}
			return nil
		})
		time.Sleep(20 * time.Second)
		synctest.Wait()
		if deadline := t0.Add(10 * time.Second); !cancelledAt.Equal(deadline) {
			t.Fatalf("task context cancelled at +%s, want exactly at the deadline +10s", cancelledAt.Sub(t0))
		}
	})
}

// Hole 3b: a task is never started after its leadership lapsed (a pause
// between the term write and the task start, modelled by a slow callback).
func TestElector_TaskNeverStartsAfterItsLeadershipLapsed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := electiontest.NewStore()
		var mu sync.Mutex
		var late []string
		first := true
		t0 := time.Now()
		start(t, store, testConfig("a"), Callbacks{
			OnNewLeader: func(id string, term int64) {
				if first {
					first = false
					time.Sleep(11 * time.Second) // the process is frozen past D
				}
			},
			OnStartedLeading: func(ctx context.Context, term int64) error {
				if term == 1 && time.Since(t0) >= 10*time.Second {
					mu.Lock()
					late = append(late, fmt.Sprintf("term %d started at +%s", term, time.Since(t0)))
					mu.Unlock()
				}
				<-ctx.Done()
				return nil
			},
		})
		time.Sleep(15 * time.Second)
		synctest.Wait()
		mu.Lock()
		defer mu.Unlock()
		if len(late) > 0 {
			t.Fatalf("a task started after its leadership lapsed at +10s: %v", late)
		}
	})
}

// Hole 6: a follower never names itself leader from a record the new holder
// has not stamped yet.
func TestElector_FollowerNeverNamesItselfLeader(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := electiontest.NewStore()
		a := start(t, store, testConfig("a"), Callbacks{})
		synctest.Wait()
		oneLeader(t, a)
		b := start(t, store, testConfig("b"), Callbacks{})
		// b stamps its term slowly (its read and its write each take just
		// under the request timeout), so the record still says "a" for
		// almost 4 s after b holds the lease.
		time.Sleep(500 * time.Millisecond)
		b.lock.SetFault(func(ctx context.Context, op string) error {
			if op == "get" || op == "update" {
				time.Sleep(1900 * time.Millisecond)
			}
			return nil
		})
		store.Break() // b wins the freed lease at its next poll; a learns at its renew
		var selfNamed []string
		for range 40 { // 10 s
			time.Sleep(250 * time.Millisecond)
			synctest.Wait()
			if st := a.e.Status(); st.Role == RoleFollower && st.Leader == "a" {
				selfNamed = append(selfNamed, time.Now().Format(time.StampMilli))
			}
		}
		if len(b.rec.all(EventStartedLeading)) == 0 {
			t.Fatal("b never led: the scenario did not happen")
		}
		for _, ev := range a.rec.all(EventObservedLeader) {
			if ev.Leader == "a" {
				t.Errorf("a observed itself as leader while following (term %d at %s)", ev.Term, ev.Time.Format(time.StampMilli))
			}
		}
		if len(selfNamed) > 0 {
			t.Errorf("a's status named itself leader while following at %v", selfNamed)
		}
	})
}

// Hole 7: after a lost lease a deposed holder pauses before contending
// again, as after a hand-off, instead of racing to win back a lease an
// operator just broke.
func TestElector_PausesBeforeContendingAfterALostLease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := electiontest.NewStore()
		a := start(t, store, testConfig("a"), Callbacks{})
		synctest.Wait()
		oneLeader(t, a)
		var mu sync.Mutex
		var acquires []time.Time
		a.lock.SetFault(func(ctx context.Context, op string) error {
			if op == "acquire" {
				mu.Lock()
				acquires = append(acquires, time.Now())
				mu.Unlock()
			}
			return nil
		})
		time.Sleep(500 * time.Millisecond)
		store.Break()
		time.Sleep(5 * time.Second)
		synctest.Wait()
		stopped := a.rec.all(EventStoppedLeading)
		if len(stopped) != 1 {
			t.Fatalf("stopped_leading = %+v, want one after the break", stopped)
		}
		mu.Lock()
		defer mu.Unlock()
		for _, at := range acquires {
			if d := at.Sub(stopped[0].Time); d >= 0 && d < 1800*time.Millisecond {
				t.Fatalf("a tried to acquire %s after losing its lease, want a pause of at least 2·P·0.9 = 1.8s", d)
			}
		}
	})
}

// Hole 9: a term write storage refuses for good (a 4xx that is not a lease
// answer) surfaces in Healthy and Ready instead of looping silently; the
// elector keeps contending, and a later successful write clears it.
func TestElector_RejectedTermWriteSurfacesInHealthAndReadiness(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := electiontest.NewStore()
		lock := store.NewLock("a")
		var mu sync.Mutex
		reject := true
		lock.SetFault(func(ctx context.Context, op string) error {
			mu.Lock()
			defer mu.Unlock()
			if op == "update" && reject {
				return fmt.Errorf("update: 403 AuthorizationFailure: %w", lease.ErrRejected)
			}
			return nil
		})
		e, err := NewElector(testConfig("a"), lock, Callbacks{})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { _ = e.Run(ctx); close(done) }()
		defer func() { cancel(); <-done }()
		time.Sleep(5 * time.Second)
		synctest.Wait()
		if e.IsLeader() {
			t.Fatal("led without a term write")
		}
		if err := e.Healthy(); err == nil || !strings.Contains(err.Error(), "term write") {
			t.Fatalf("Healthy() = %v, want the refused term write", err)
		}
		if err := e.Ready(); err == nil || !strings.Contains(err.Error(), "term write") {
			t.Fatalf("Ready() = %v, want the refused term write", err)
		}
		if n := lock.Calls("acquire"); n < 2 {
			t.Fatalf("%d acquire attempts in 5 s, want the elector to keep contending", n)
		}
		mu.Lock()
		reject = false
		mu.Unlock()
		time.Sleep(5 * time.Second)
		synctest.Wait()
		if !e.IsLeader() || e.Healthy() != nil || e.Ready() != nil {
			t.Fatalf("after storage accepts the write: leader=%v healthy=%v ready=%v", e.IsLeader(), e.Healthy(), e.Ready())
		}
	})
}
