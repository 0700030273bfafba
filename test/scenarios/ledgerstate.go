package scenarios

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/blobleader/blobleader/chaos"
	"github.com/blobleader/blobleader/test/checker"
	"github.com/blobleader/blobleader/test/cluster"
	"github.com/blobleader/blobleader/worker/ledger"
)

// A ledger segment edited from outside (docs/chaos.md#scenarios), judged by
// the ledger's own entries: the work must go on, or — when nothing can make
// progress — the leaders must step down rather than hold the lease for ever.
var (
	// LedgerSegmentReplaced: the ledger's last segment re-uploaded as a
	// block blob with the same lines (`az storage blob upload`'s default).
	LedgerSegmentReplaced = Scenario{Name: "LedgerSegmentReplaced", Workers: 3, Run: ledgerSegmentReplaced,
		Requires: checker.Requirements{LeadershipsBeforeFault: 1, LedgerEntries: 1}}
	// LedgerPoisoned: the last segment replaced by a file that is not a
	// ledger — which the next term keeps as found and continues past — and
	// then a term above the lock's planted in the last segment's metadata,
	// which no leader can append past until an operator repairs it.
	LedgerPoisoned = Scenario{Name: "LedgerPoisoned", Workers: 3, Run: ledgerPoisoned,
		Requires: checker.Requirements{LeadershipsBeforeFault: 1, LeadershipsAfterFault: 1}}
)

// Worker defaults the ledger scenarios rely on.
const (
	watchdogTimeout = 10 * time.Second // --watchdog-timeout's default
	maxBackoff      = 4                // × L: the longest pause after leaderships without progress
)

// ledgerRepairBound is how long after a segment is replaced the ledger takes
// new entries again: the leader's next append fails (one tick), the one after
// finds a segment it cannot tell is its own (a tick) and hands on; a follower
// takes over within P·1.1 of the release and its first append opens the
// ledger under its new term, sealing the replaced segment and creating the
// next (two request timeouts each step).
func ledgerRepairBound(p cluster.Params) time.Duration {
	return 2*(p.Tick+2*p.RequestTimeout()) + p.RetryPeriod*11/10 + 2*p.RequestTimeout()
}

func ledgerSegmentReplaced(t *testing.T, c cluster.Cluster) {
	p := c.Params()
	leading(t, c)
	f := &chaos.LedgerBlobType{Ledger: c.LockBlob()}
	inject(t, c, f, nil)
	at := time.Now()
	bound := ledgerRepairBound(p)
	waitLedgerAfter(t, c, at, 3, bound+slack)
	remove(t, c, f)
}

// ledgerPoisoned: the segment that is not a ledger is repaired by the next
// term (kept as found, counted, the ledger continuing in the next segment)
// within the bound of a replaced segment. Then a term above the lock's in
// the last segment: nobody can append (their terms would go back), so no
// leadership may last longer than the watchdog timeout plus a renew
// interval (no append lands, so no progress), the step-downs must be
// counted where the alerts read them, and after the operator puts the term
// back a leader appends again within the longest backoff plus a failover.
func ledgerPoisoned(t *testing.T, c cluster.Cluster) {
	p := c.Params()
	leading(t, c)
	f := &chaos.LedgerBlobType{Ledger: c.LockBlob(), Content: "not a ledger\n"}
	inject(t, c, f, nil)
	waitLedgerAfter(t, c, time.Now(), 3, ledgerRepairBound(p)+slack)
	repaired := 0.0
	for _, w := range c.Workers() {
		repaired += metricValue(t, w, `blobleader_repairs_total{cause="not_a_ledger",object="ledger"}`)
	}
	if repaired != 1 {
		t.Errorf("blobleader_repairs_total{object=\"ledger\",cause=\"not_a_ledger\"} sums to %v over the workers, want 1", repaired)
	}
	remove(t, c, f) // nothing to undo: repaired
	segs := ledgerSegments(t, c)
	planted := &chaos.PlantedTerm{Blob: segs[len(segs)-1], MetadataOnly: true}
	inject(t, c, planted, nil)
	shortLeaderships(t, c, 3*watchdogTimeout, watchdogTimeout+p.RenewInterval+slack)
	total := 0.0
	for _, w := range c.Workers() {
		total += metricValue(t, w, "blobleader_no_progress_stepdowns_total")
	}
	if total < 1 {
		t.Errorf("blobleader_no_progress_stepdowns_total sums to %v over the workers after %v of a ledger nobody can append to, want at least 1", total, 3*watchdogTimeout)
	}
	remove(t, c, planted) // the operator puts the term back (or runs the printed recover-term)
	healed := time.Now()
	bound := maxBackoff*p.LeaseDuration + p.RetryPeriod*11/10 + p.Tick + 4*p.RequestTimeout()
	waitLedgerAfter(t, c, healed, 3, bound+slack)
}

// ledgerSegments names the segments of the cluster's ledger, in order.
func ledgerSegments(t *testing.T, c cluster.Cluster) []string {
	t.Helper()
	segs, err := ledger.ListSegments(ctxFor(t, 10*time.Second), c.Storage(), c.LockBlob())
	if err != nil || len(segs) == 0 {
		t.Fatalf("the ledger's segments: %v (%d)", err, len(segs))
	}
	names := make([]string, len(segs))
	for i, s := range segs {
		names[i] = s.Name
	}
	return names
}

// shortLeaderships watches the workers for d and fails t when one
// leadership (identity and term) lasts longer than limit.
func shortLeaderships(t *testing.T, c cluster.Cluster, d, limit time.Duration) {
	t.Helper()
	type key struct {
		id   string
		term int64
	}
	since := map[key]time.Time{}
	last := map[key]time.Time{} // the last time each was seen leading
	end := time.Now().Add(d)
	for time.Now().Before(end) {
		for _, w := range c.Workers() {
			st, err := w.Status(ctxFor(t, 2*time.Second))
			if err != nil || st.Role != "leader" {
				continue
			}
			k := key{st.Identity, st.Term}
			first, ok := since[k]
			if !ok {
				since[k] = time.Now()
				t.Logf("%s leads term %d", k.id, k.term)
				continue
			}
			// The watchdog's step-down needs the machine to run the
			// leader: a leadership past limit by no more than the stall
			// measured since it began is waited on (timingBound judges it
			// when it ends, or at the end); beyond that it fails.
			if held := time.Since(first); held > limit+stallOf(c, first, time.Now()) {
				t.Fatalf("%s has led term %d for %v with a ledger nobody can append to; a leader without progress must step down within %v (plus the %v the machine stalled)",
					k.id, k.term, held.Round(time.Millisecond), limit, stallOf(c, first, time.Now()).Round(time.Millisecond))
			}
			last[k] = time.Now()
		}
		hold(t, 200*time.Millisecond)
	}
	for k, first := range since {
		if seen, ok := last[k]; ok {
			timingBound(t, c, fmt.Sprintf("%s's step-down from term %d with a ledger nobody can append to", k.id, k.term), first, first.Add(limit), seen)
		}
	}
	if len(since) < 2 {
		t.Errorf("only %d leadership(s) in %v of a ledger nobody can append to: the leaders did not take turns", len(since), d)
	}
}

// waitLedgerAfter waits until the ledger holds at least n entries stamped
// after `after`, and fails t after timeout. It logs when the first came.
func waitLedgerAfter(t *testing.T, c cluster.Cluster, after time.Time, n int, timeout time.Duration) {
	t.Helper()
	wt := waitOn(c, timeout)
	var last string
	for {
		es, err := ReadLedger(ctxFor(t, 10*time.Second), c.Storage(), c.LockBlob())
		var newer []checker.LedgerEntry
		for _, e := range es {
			if e.At.After(after) {
				newer = append(newer, e)
			}
		}
		if err == nil && len(newer) >= n {
			t.Logf("the ledger took entry %d (term %d, %s) %v after the fault", newer[0].Seq, newer[0].Term, newer[0].Holder, newer[0].At.Sub(after).Round(time.Millisecond))
			return
		}
		last = fmt.Sprintf("%d entries after it (read error %v)", len(newer), err)
		if wt.over() {
			wt.fatal(t, "the ledger took no %d entries within %v: %s", n, timeout, last)
		}
		hold(t, 200*time.Millisecond)
	}
}

// metricValue reads an unlabelled metric from w's /metrics (0 when w does
// not answer or has no such metric).
func metricValue(t *testing.T, w cluster.Worker, name string) float64 {
	t.Helper()
	pr, ok := w.(cluster.Prober)
	if !ok {
		t.Fatalf("the backend's worker %T cannot be probed", w)
	}
	_, body, err := pr.Probe(ctxFor(t, 5*time.Second), "/metrics")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(body, "\n") {
		if rest, ok := strings.CutPrefix(line, name+" "); ok {
			var v float64
			if _, err := fmt.Sscan(rest, &v); err == nil {
				return v
			}
		}
	}
	return 0
}
