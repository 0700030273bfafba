package election

import (
	"math"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// A term at the top of the int64 range cannot grow: the next would wrap to
// the most negative int64 and terms would go backwards. No contender may lead
// on it; each says why in Healthy, Ready and Status, tells it once per lease
// duration (not once per poll), and leaves the record for the operator.
// Once the operator repairs the record, a leader follows within a poll.
func TestElector_TermThatCannotGrowIsLoudAndNeverWraps(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := NewMemStore()
		store.SetRecord(Record{Holder: "operator", Term: math.MaxInt64})
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
		store.SetRecord(Record{Holder: "operator", Term: 100})
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
