package cluster

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/blobleader/blobleader/worker/stalltest"
)

// LeaderFinder is the Leader, WaitLeader and FindLeader of a Cluster, written
// once over the Worker interface: a backend says how to list its workers,
// which of them cannot be asked right now, and how long to wait for an
// answer; the finder asks every worker for its status at once and wants
// exactly one "leader".
type LeaderFinder struct {
	List func() []Worker // the cluster's workers
	// Unaskable says why w cannot answer now (stopped, paused), or nil: a
	// worker that cannot answer is reported, not waited for.
	Unaskable func(w Worker) error
	Ask       time.Duration // bound on one status request; 0: only the round's deadline
	Round     time.Duration // Leader's bound on its one round
	Poll      time.Duration // WaitLeader's and FindLeader's pause between rounds
	// Stall is the environment's stall in a window (Local.StallIn), added
	// to WaitLeader's and FindLeader's timeout, up to (stalltest.MaxStretch
	// − 1) × the timeout: the wait only keeps a broken run from hanging,
	// and a starved machine still ends it (a caller that can retry judges
	// one the machine stalled for that whole stretch inconclusive). Nil:
	// none.
	Stall func(from, to time.Time) time.Duration
}

// roles asks every askable worker for its status at once and returns those
// that report role "leader", with a line per worker saying what it said.
func (f LeaderFinder) roles(ctx context.Context) (leaders []Worker, seen []string) {
	ws := f.List()
	sts := make([]Status, len(ws))
	errs := make([]error, len(ws))
	var wg sync.WaitGroup
	for i, w := range ws {
		if f.Unaskable != nil {
			if errs[i] = f.Unaskable(w); errs[i] != nil {
				continue
			}
		}
		wg.Go(func() {
			actx := ctx
			if f.Ask > 0 {
				var cancel context.CancelFunc
				actx, cancel = context.WithTimeout(ctx, f.Ask)
				defer cancel()
			}
			sts[i], errs[i] = w.Status(actx)
		})
	}
	wg.Wait()
	for i, w := range ws {
		if errs[i] != nil {
			seen = append(seen, fmt.Sprintf("%s: %v", w.Identity(), errs[i]))
			continue
		}
		seen = append(seen, fmt.Sprintf("%s: %s term %d (leader %q)", sts[i].Identity, sts[i].Role, sts[i].Term, sts[i].Leader))
		if sts[i].Role == "leader" {
			leaders = append(leaders, w)
		}
	}
	return leaders, seen
}

// Leader fails t unless exactly one worker reports role "leader" now.
func (f LeaderFinder) Leader(t testing.TB) Worker {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), f.Round)
	defer cancel()
	leaders, seen := f.roles(ctx)
	if len(leaders) != 1 {
		t.Fatalf("expected one leader, found %d: %s", len(leaders), strings.Join(seen, "; "))
	}
	return leaders[0]
}

// WaitLeader polls until exactly one worker leads (and it is not one of
// except), or fails t after timeout.
func (f LeaderFinder) WaitLeader(t testing.TB, timeout time.Duration, except ...string) Worker {
	t.Helper()
	w, err := f.FindLeader(timeout, except...)
	if err != nil {
		t.Fatalf("%v", err)
	}
	return w
}

// FindLeader is WaitLeader without a testing.TB.
func (f LeaderFinder) FindLeader(timeout time.Duration, except ...string) (Worker, error) {
	start := time.Now()
	end := func() time.Time {
		if f.Stall == nil {
			return start.Add(timeout)
		}
		return start.Add(timeout + min(f.Stall(start, time.Now()), (stalltest.MaxStretch-1)*timeout))
	}
	tick := time.NewTicker(f.Poll)
	defer tick.Stop()
	var seen []string
	for {
		ctx, cancel := context.WithDeadline(context.Background(), end())
		var leaders []Worker
		leaders, seen = f.roles(ctx)
		cancel()
		if len(leaders) == 1 && !slices.Contains(except, leaders[0].Identity()) {
			return leaders[0], nil
		}
		if time.Now().After(end()) {
			what := "one leader"
			if len(except) > 0 {
				what += " other than " + strings.Join(except, ", ")
			}
			return nil, fmt.Errorf("expected %s within %v (plus the %v the machine stalled); last seen: %s", what, timeout, time.Since(start)-timeout, strings.Join(seen, "; "))
		}
		<-tick.C
	}
}
