package bench

import (
	"testing"
	"time"

	"github.com/blobleader/blobleader/test/checker"
	"github.com/blobleader/blobleader/test/cluster"
)

// What the run-mode jobs read of the commands' own activity log and of the
// cluster's workers.

// readActivity reads the commands' activity log (checker.ReadActivity).
func readActivity(t testing.TB, path string) []checker.Activity {
	acts, err := checker.ReadActivity(path)
	if err != nil {
		t.Fatal(err)
	}
	return acts
}

// await reads every 10 ms until an item satisfies pred and returns the
// first such; t fails with "no <what> within <timeout>" after timeout.
func await[T any](t testing.TB, timeout time.Duration, what string, read func() []T, pred func(T) bool) T {
	deadline := time.Now().Add(timeout)
	for {
		for _, x := range read() {
			if pred(x) {
				return x
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s within %v", what, timeout)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// awaitActivity polls the activity log until an entry satisfies pred and
// returns the first such entry.
func awaitActivity(t testing.TB, path string, timeout time.Duration, what string, pred func(checker.Activity) bool) checker.Activity {
	return await(t, timeout, what, func() []checker.Activity { return readActivity(t, path) }, pred)
}

// reportSpan is the earliest and the latest report of holder's command of
// term (zero times when there is none).
func reportSpan(t testing.TB, path, holder string, term int64) (first, last time.Time) {
	for _, a := range readActivity(t, path) {
		if a.Holder != holder || a.Term != term {
			continue
		}
		if first.IsZero() || a.At.Before(first) {
			first = a.At
		}
		if a.At.After(last) {
			last = a.At
		}
	}
	return first, last
}

// awaitFirstReport waits for a report of holder's command of term and
// returns the earliest one's time.
func awaitFirstReport(t testing.TB, path, holder string, term int64, timeout time.Duration) time.Time {
	awaitActivity(t, path, timeout, "report of "+holder+"'s command", func(a checker.Activity) bool { return a.Holder == holder && a.Term == term })
	first, _ := reportSpan(t, path, holder, term)
	return first
}

// workerNamed is the cluster's worker with that identity; t fails without.
func workerNamed(t testing.TB, c *cluster.Local, identity string) cluster.Worker {
	for _, w := range c.Workers() {
		if w.Identity() == identity {
			return w
		}
	}
	t.Fatalf("no worker %s", identity)
	return nil
}
