package scenarios

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/blobleader/blobleader/test/cluster"
	"github.com/blobleader/blobleader/worker/stalltest"
)

// stalledCluster is a cluster whose probes say the machine stalled for the
// whole of every window: each wait on it is starved from its start.
type stalledCluster struct{ cluster.Cluster }

func (stalledCluster) StallIn(from, to time.Time) time.Duration { return to.Sub(from) }

// A wait on a machine that stalls the whole time runs out at its stretch
// (stalltest.MaxStretch × its timeout), as stalltest's Await does, rather
// than never; and the scenario that gives up on it is inconclusive (run
// again), not failed: the machine, not the system, was slow.
func TestWaitOn_AStarvedWaitEndsAtItsStretchInconclusive(t *testing.T) {
	t.Setenv(EnvRetryLog, filepath.Join(t.TempDir(), "retries.log"))
	const timeout = 50 * time.Millisecond
	runs := 0
	retryInconclusive(t, func(t *testing.T) {
		runs++
		if runs > 1 {
			return // the retry: judged nothing, so it passes
		}
		wt := waitOn(stalledCluster{}, timeout)
		deadline := time.Now().Add(5 * time.Second)
		for !wt.over() {
			if time.Now().After(deadline) {
				t.Fatalf("a wait of %v on a machine stalled throughout had not run out after 5 s", timeout)
			}
			time.Sleep(5 * time.Millisecond)
		}
		if d := time.Since(wt.start); d < stalltest.MaxStretch*timeout {
			t.Errorf("the wait ran out after %v; want its stretch, %v", d, stalltest.MaxStretch*timeout)
		}
		wt.fatal(t, "the ledger took no entries within %v", wt)
	})
	if runs != 2 {
		t.Errorf("%d runs; want 2 (the starved one, judged inconclusive, and its retry)", runs)
	}
}
