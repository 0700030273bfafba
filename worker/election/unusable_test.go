package election

import (
	"context"
	"math"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/blobleader/blobleader/worker/election/electiontest"
	"github.com/blobleader/blobleader/worker/election/lease"
)

// A term at the top of the int64 range cannot grow: the next would wrap to
// the most negative int64 and terms would go backwards. No contender may lead
// on it; each says why in Healthy, Ready and Status, tells it once per lease
// duration (not once per poll), and leaves the record for the operator.
// Once the operator repairs the record, a leader follows within a poll.
func TestElector_TermThatCannotGrowIsLoudAndNeverWraps(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := electiontest.NewStore()
		store.SetRecord(lease.Record{Holder: "operator", Term: math.MaxInt64})
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
			for name, err := range map[string]error{"Healthy": c.e.Healthy(), "Ready": c.e.Ready()} {
				if err == nil || !strings.Contains(err.Error(), "cannot grow") {
					t.Errorf("%s: %s() = %v; want the reason (the term cannot grow)", id, name, err)
				}
			}
			if u := c.e.Status().Unusable; !strings.Contains(u, "cannot grow") {
				t.Errorf("%s: Status().Unusable = %q; want the reason", id, u)
			}
			// Once at the start and once after a lease duration: not per poll.
			if n := len(c.rec.all(EventAcquireFailed)); n < 1 || n > 2 {
				t.Errorf("%s: %d acquire_failed events in 20 s; want one per lease duration (1–2), not one per poll", id, n)
			}
		}
		if r := store.Record(); r.Term != math.MaxInt64 || r.Holder != "operator" {
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
						if err := c.e.Healthy(); err == nil || !strings.Contains(err.Error(), "cannot grow") {
							t.Fatalf("%s: Healthy() = %v at %s; want the unusable record, at every sample", id, err, time.Now().Format(time.StampMilli))
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
