package cluster

import (
	"testing"
	"time"

	"github.com/blobleader/blobleader/worker/stalltest"
)

// A wait for a leader lasts its timeout plus the stall measured meanwhile,
// but at most MaxStretch × its timeout: a machine starved without end
// still ends the wait (the caller judges it inconclusive), instead of
// stretching it for as long as the stall lasts.
func TestFindLeader_AStallStretchesTheWaitUpToItsCap(t *testing.T) {
	const timeout = 200 * time.Millisecond
	f := LeaderFinder{
		List:  func() []Worker { return nil }, // never a leader
		Poll:  10 * time.Millisecond,
		Stall: func(from, to time.Time) time.Duration { return to.Sub(from) }, // stalled the whole time
	}
	began := time.Now()
	done := make(chan error, 1)
	go func() {
		_, err := f.FindLeader(timeout)
		done <- err
	}()
	limit := stalltest.MaxStretch*timeout + 5*time.Second // the cap, and room for a slow machine
	select {
	case err := <-done:
		took := time.Since(began)
		if err == nil {
			t.Fatal("FindLeader found a leader among no workers")
		}
		if took < stalltest.MaxStretch*timeout {
			t.Fatalf("FindLeader gave up after %v, before the %v the stall stretched it to: %v", took, stalltest.MaxStretch*timeout, err)
		}
		t.Logf("gave up after %v (timeout %v, cap %v): %v", took.Round(time.Millisecond), timeout, stalltest.MaxStretch*timeout, err)
	case <-time.After(limit):
		t.Fatalf("FindLeader still waits %v after it began, its timeout %v stretched without end by the stall", limit, timeout)
	}
}
