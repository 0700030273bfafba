package election

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/blobleader/blobleader/worker/election/electiontest"
	"github.com/blobleader/blobleader/worker/election/lease"
)

// A follower stopped (Run's context cancelled) while its acquire is in
// flight cannot know whether storage granted it: the request may have landed
// and only the answer been cut off. It must release with that lease ID, or a
// granted lease blocks every other contender for a whole lease duration.
func TestElector_CancelledMidAcquireReleasesAMaybeGrantedLease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := electiontest.NewStore()
		side := store.NewLock("storage") // applies the request at storage
		inFlight := make(chan struct{})
		// The fault is in place before the elector runs: installed after,
		// the elector's first acquire could win before it (its goroutine
		// runs at once on a second core) and the test would wait for an
		// acquire in flight that never comes, renewing in fake time for
		// ever (seen once in 70 runs of -count=20 under load).
		lock := store.NewLock("a")
		lock.SetFault(func(ctx context.Context, op string) error {
			if op != "acquire" {
				return nil
			}
			// Storage grants the lease; the answer never comes back.
			if err := side.Acquire(context.Background(), lock.LastLeaseID("acquire"), 15*time.Second); err != nil {
				return err
			}
			close(inFlight)
			<-ctx.Done()
			return ctx.Err()
		})
		c := startOn(t, testConfig("a"), lock, lock, Callbacks{})
		select {
		case <-inFlight:
		case <-time.After(time.Minute): // fake time: a minute of polls
			t.Fatalf("no acquire reached the fault in a minute; the elector leads: %v", c.e.IsLeader())
		}
		c.cancel()
		<-c.exited
		other := store.NewLock("b")
		if err := other.Acquire(context.Background(), newLeaseID(), 15*time.Second); errors.Is(err, lease.ErrHeld) {
			t.Fatalf("after a follower was stopped mid-acquire the lease is still held: its granted lease blocks everyone for L (%v)", err)
		} else if err != nil {
			t.Fatal(err)
		}
	})
}

// A term at the top of the int64 range cannot grow: the next would wrap to
// the most negative int64 and terms would go backwards; nor can one at
// lease.MaxTerm or above it (int64 max − 1 would take the fleet to int64
// max in one change, and then nowhere). No contender may lead
// on it; each says why in Ready and Status (not Healthy: a restart does
// not cure it), tells it once per lease
// duration (not once per poll), and leaves the record for the operator.
// Once the operator repairs the record, a leader follows within a poll.
func TestElector_TermThatCannotGrowIsLoudAndNeverWraps(t *testing.T) {
	for _, top := range []int64{math.MaxInt64, math.MaxInt64 - 1, lease.MaxTerm} {
		t.Run(fmt.Sprint(top), func(t *testing.T) { termThatCannotGrow(t, top) })
	}
}

func termThatCannotGrow(t *testing.T, top int64) {
	synctest.Test(t, func(t *testing.T) {
		store := electiontest.NewStore()
		store.SetRecord(lease.Record{Holder: "operator", Term: top})
		a := start(t, store, testConfig("a"), Callbacks{})
		b := start(t, store, testConfig("b"), Callbacks{})
		for range 20 { // 20 s: more than one lease duration
			time.Sleep(time.Second)
			synctest.Wait()
			for _, c := range []*contender{a, b} {
				if c.e.IsLeader() {
					t.Fatalf("%s leads term %d on a record whose term cannot grow", c.e.cfg.Identity, c.e.Status().Term)
				}
			}
		}
		for _, c := range []*contender{a, b} {
			id := c.e.cfg.Identity
			if err := c.e.Ready(); err == nil || !strings.Contains(err.Error(), "cannot grow") {
				t.Errorf("%s: Ready() = %v; want the reason (the term cannot grow)", id, err)
			}
			// A restart does not cure it: liveness stays green.
			if err := c.e.Healthy(); err != nil {
				t.Errorf("%s: Healthy() = %v; an unusable record is readiness, not liveness", id, err)
			}
			if u := c.e.Status().Unusable; !strings.Contains(u, "cannot grow") {
				t.Errorf("%s: Status().Unusable = %q; want the reason", id, u)
			}
			// Once at the start and once after a lease duration: not per poll.
			if n := len(c.rec.all(EventAcquireFailed)); n < 1 || n > 2 {
				t.Errorf("%s: %d acquire_failed events in 20 s; want one per lease duration (1–2), not one per poll", id, n)
			}
		}
		if r := store.Record(); r.Term != top || r.Holder != "operator" {
			t.Fatalf("record = %+v; the contenders must leave it untouched", r)
		}

		// The operator repairs it: a leader within two polls, above the repair.
		store.SetRecord(lease.Record{Holder: "operator", Term: 100})
		time.Sleep(2*1100*time.Millisecond + time.Millisecond)
		synctest.Wait()
		l := oneLeader(t, a, b)
		if st := l.e.Status(); st.Term != 101 {
			t.Fatalf("leader after the repair leads term %d, want 101", st.Term)
		}
		for _, c := range []*contender{a, b} {
			time.Sleep(1100 * time.Millisecond) // a poll: the follower reads the good record
			synctest.Wait()
			if err := c.e.Healthy(); err != nil {
				t.Errorf("%s: Healthy() after the repair = %v", c.e.cfg.Identity, err)
			}
		}
	})
}

// With a record no contender can lead on, every read of it must say so: a
// follower that finds the lease held (by whoever briefly took it, or an
// operator's tool) reads the record to learn who leads, and must not take
// that read as a usable record — Healthy stays red at every sample, and
// Status names no leader, since nobody can lead on it.
func TestElector_UnusableRecordStaysLoudWhileTheLeaseIsHeld(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  func(string) Config
	}{
		{"polling with acquires", testConfig},
		{"polling with reads (early takeover)", fastConfig},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				store := electiontest.NewStore()
				store.SetRecord(lease.Record{Holder: "old-leader", Term: math.MaxInt64})
				holder := store.NewLock("operator")
				if err := holder.Acquire(context.Background(), newLeaseID(), 60*time.Second); err != nil {
					t.Fatal(err)
				}
				a := start(t, store, tc.cfg("a"), Callbacks{})
				b := start(t, store, tc.cfg("b"), Callbacks{})
				samples := 0
				for range 60 { // 30 s: polls that find the lease held
					time.Sleep(500 * time.Millisecond)
					synctest.Wait()
					for _, c := range []*contender{a, b} {
						id := c.e.cfg.Identity
						if err := c.e.Ready(); err == nil || !strings.Contains(err.Error(), "cannot grow") {
							t.Fatalf("%s: Ready() = %v at %s; want the unusable record, at every sample", id, err, time.Now().Format(time.StampMilli))
						}
						if st := c.e.Status(); st.Leader != "" || st.Unusable == "" {
							t.Fatalf("%s: Status() = %+v; want no leader (nobody can lead on this record) and the reason", id, st)
						}
						samples++
					}
				}
				if n := a.lock.Calls("get") + b.lock.Calls("get") + a.lock.Calls("inspect") + b.lock.Calls("inspect"); n == 0 || samples != 120 {
					t.Fatalf("%d record reads, %d samples: the test exercised nothing", n, samples)
				}
			})
		})
	}
}

// Terms never go backwards, even when the record is deleted (an
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

// A follower never names itself leader from a record the new holder
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

// A term write storage refuses for good (a 4xx that is not a lease
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
