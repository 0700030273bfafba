package scenarios

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/blobleader/blobleader/chaos"
	"github.com/blobleader/blobleader/test/checker"
	"github.com/blobleader/blobleader/test/cluster"
	"github.com/blobleader/blobleader/worker/storage"
)

// LockBlobDeleted and LockContainerDeleted: an operator deletes the lock
// blob (breaking its lease first, as the tools do) or its whole container
// under a running cluster. The holder learns at its next renew (404 is a
// definite loss: the forced-break rule), and whoever leads next gets a term
// above every term used before: a recreated, empty record never hands out
// a term again.
var (
	LockBlobDeleted = Scenario{Name: "LockBlobDeleted", Workers: 2, Run: lockDeleted(func() chaos.Fault { return &chaos.DeleteBlob{} }),
		Requires: hitAndFailover(checker.FaultDeleteBlob)}
	LockContainerDeleted = Scenario{Name: "LockContainerDeleted", Workers: 2, Run: lockDeleted(func() chaos.Fault { return &chaos.DeleteContainer{} }),
		Requires: hitAndFailover(checker.FaultDeleteContainer)}
)

// OperatorWritesBadMetadata: an operator writes the lock's metadata by hand
// with the workers running — a typo in the term, a term at the top of the
// int64 range, a record without its holder. A record no contender can stamp
// a next term on must make the fleet say so (every worker's /readyz red
// with the reason, /status and a metric too; /healthz green, since a
// restart cures nothing) and leave the
// record untouched, never livelock quietly nor wrap the term to a negative
// one; after the repair a leader follows. A record without a holder is no
// obstacle: a leader follows with a higher term.
var OperatorWritesBadMetadata = Scenario{Name: "OperatorWritesBadMetadata", Workers: 3, Run: operatorWritesBadMetadata,
	Requires: hitAndFailover(checker.FaultOperatorMetadata)}

func operatorWritesBadMetadata(t *testing.T, c cluster.Cluster) {
	p := c.Params()
	for _, term := range []string{"9223372036854775806", "1795400000000x", "9223372036854775807"} {
		old := leading(t, c)
		was, err := old.Status(observe(t))
		if err != nil {
			t.Fatal(err)
		}
		f := &chaos.OperatorMetadata{Term: term}
		inject(t, c, f, nil)
		leftTerm(t, old, was.Term, p.RenewInterval+p.RequestTimeout()+slack)
		// Every contender finds out at its next acquire (one poll, or the
		// 2·P hand-off pause for the old leader).
		loud(t, c, 2*p.RetryPeriod*11/10+2*p.RequestTimeout()+slack)
		// For 30 samples more (several polls each): nobody leads, nobody
		// names a leader, every worker stays loud, nobody rewrites the record.
		for range 30 {
			for _, w := range c.Workers() {
				if !w.Running() {
					continue
				}
				st, err := w.Status(ctxFor(t, 5*time.Second))
				switch {
				case err != nil:
				case st.Role == "leader":
					t.Errorf("%s leads term %d on the record with term %q", w.Identity(), st.Term, term)
				case st.Leader != "":
					t.Errorf("%s names %s as leader (term %d) on the record with term %q, which nobody can lead on", w.Identity(), st.Leader, st.Term, term)
				}
				if why := notLoud(t, w); why != "" {
					t.Errorf("%s went quiet on the record with term %q: %s", w.Identity(), term, why)
				}
			}
			hold(t, 200*time.Millisecond) // sampling HTTP: no event to await across processes
		}
		if got := lockTerm(t, c); got != term {
			t.Errorf("the contenders rewrote the operator's term %q to %q: the record must be left for the operator", term, got)
		}
		remove(t, c, f) // the operator repairs the typo: the record as it was
		next := waitLeader(t, c, takeover(p))
		if st, err := next.Status(ctxFor(t, 5*time.Second)); err == nil && st.Term <= was.Term {
			t.Errorf("after the repair %s leads term %d, not above %d: terms went back", next.Identity(), st.Term, was.Term)
		}
	}
	// No holder: nothing stops the next leader.
	old := leading(t, c)
	was, err := old.Status(observe(t))
	if err != nil {
		t.Fatal(err)
	}
	f := &chaos.OperatorMetadata{DropHolder: true}
	inject(t, c, f, nil)
	leftTerm(t, old, was.Term, p.RenewInterval+p.RequestTimeout()+slack)
	next := waitLeader(t, c, p.RenewInterval+p.RequestTimeout()+2*p.RetryPeriod*11/10+slack)
	if st, err := next.Status(ctxFor(t, 5*time.Second)); err == nil && st.Term <= was.Term {
		t.Errorf("after the holder was dropped %s leads term %d, not above %d", next.Identity(), st.Term, was.Term)
	}
	remove(t, c, f)
}

// loud waits until every running worker reports the unusable record: /readyz
// 503 naming the term (/healthz 200), /status's unusable set, and the
// metric at 1. It fails t with what each still said at the timeout.
func loud(t *testing.T, c cluster.Cluster, timeout time.Duration) {
	t.Helper()
	wt := waitOn(c, timeout)
	for {
		var quiet []string
		for _, w := range c.Workers() {
			if !w.Running() {
				continue
			}
			if why := notLoud(t, w); why != "" {
				quiet = append(quiet, w.Identity()+": "+why)
			}
		}
		if len(quiet) == 0 {
			return
		}
		if wt.over() {
			wt.fatal(t, "%v after the operator's write, not every worker says it cannot lead:\n  %s", timeout, strings.Join(quiet, "\n  "))
		}
		hold(t, 200*time.Millisecond) // polling HTTP: no event to await across processes
	}
}

// notLoud says what w does not yet report about the unusable record.
func notLoud(t *testing.T, w cluster.Worker) string {
	pr, ok := w.(cluster.Prober)
	if !ok {
		t.Fatalf("the backend's worker %T cannot be probed", w)
	}
	code, body, err := pr.Probe(ctxFor(t, 5*time.Second), "/readyz")
	if err != nil || code != 503 || !strings.Contains(body, "term") {
		return fmt.Sprintf("/readyz = %d %q (%v), want 503 naming the term", code, strings.TrimSpace(body), err)
	}
	// A restart does not cure it: liveness stays green.
	if code, body, err := pr.Probe(ctxFor(t, 5*time.Second), "/healthz"); err != nil || code != 200 {
		return fmt.Sprintf("/healthz = %d %q (%v), want 200: a record nobody can lead on is readiness, not liveness", code, strings.TrimSpace(body), err)
	}
	st, err := w.Status(ctxFor(t, 5*time.Second))
	if err != nil || st.Unusable == "" {
		return fmt.Sprintf("/status has no unusable reason (%v)", err)
	}
	_, m, err := pr.Probe(ctxFor(t, 5*time.Second), "/metrics")
	if err != nil || !strings.Contains(m, "\nblobleader_lock_record_unusable 1") {
		return fmt.Sprintf("metric blobleader_lock_record_unusable is not 1 (%v)", err)
	}
	return ""
}

// lockTerm reads the lock blob's term metadata verbatim.
func lockTerm(t *testing.T, c cluster.Cluster) string {
	t.Helper()
	props, err := c.Storage().NewBlobClient(c.LockBlob()).GetProperties(observe(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	return storage.MetadataValue(props.Metadata, storage.MetaTerm)
}

// lockDeleted deletes the lock with fault under a running cluster and
// expects the holder out of its term within a renew interval and a request
// timeout, and the next leader within a poll more, on a higher term.
func lockDeleted(fault func() chaos.Fault) func(t *testing.T, c cluster.Cluster) {
	return func(t *testing.T, c cluster.Cluster) {
		p := c.Params()
		old := leading(t, c)
		was, err := old.Status(observe(t))
		if err != nil {
			t.Fatal(err)
		}
		f := fault()
		inject(t, c, f, nil)
		leftTerm(t, old, was.Term, p.RenewInterval+p.RequestTimeout()+slack)
		next := waitLeader(t, c, p.RenewInterval+p.RequestTimeout()+p.RetryPeriod*11/10+slack)
		st, err := next.Status(observe(t))
		if err != nil {
			t.Fatal(err)
		}
		if st.Term <= was.Term {
			t.Errorf("after %s the new leader %s leads term %d, not above the deleted record's term %d: terms went back", f.Kind(), next.Identity(), st.Term, was.Term)
		}
		t.Logf("after %s: %s term %d → %s term %d", f.Kind(), old.Identity(), was.Term, next.Identity(), st.Term)
		remove(t, c, f)
	}
}

// leftTerm waits until w no longer leads term (it may lead a newer one).
func leftTerm(t *testing.T, w cluster.Worker, term int64, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		st, err := w.Status(observe(t))
		if err != nil {
			t.Fatal(err)
		}
		if st.Role != "leader" || st.Term != term {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s still leads term %d %v after the lock was deleted", w.Identity(), term, timeout)
		}
		hold(t, 50*time.Millisecond)
	}
}
