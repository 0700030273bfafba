package scenarios

import (
	"testing"
	"time"

	"github.com/blobleader/blobleader/chaos"
	"github.com/blobleader/blobleader/test/checker"
	"github.com/blobleader/blobleader/test/cluster"
)

// StorageRolledBack: storage goes back in time — the lock's record and the
// ledger restored to an earlier copy, as an account failover to a
// geo-replica behind by its replication lag hands back. The newer terms are
// then remembered only by the processes that saw them; restarted ones (a
// failover is when workers restart) remember nothing. No term may be handed
// out twice (S2): the next leader's term must be above every term handed
// out before the rollback, though the record says less.
var StorageRolledBack = Scenario{Name: "StorageRolledBack", Workers: 2, Run: storageRolledBack,
	Requires: checker.Requirements{LeadershipsBeforeFault: 1, LeadershipsAfterFault: 1}}

func storageRolledBack(t *testing.T, c cluster.Cluster) {
	p := c.Params()
	first := leading(t, c)
	hold(t, 2*time.Second) // a few ledger entries under the first term
	rb := &chaos.Rollback{Container: c.Storage(), LockBlob: c.LockBlob()}
	if err := rb.Snapshot(ctxFor(t, 30*time.Second)); err != nil {
		t.Fatal(err)
	}
	// Newer terms: the first leader hands over, then both stop (releasing).
	stops := map[string]*chaos.Stop{}
	stop := func(w cluster.Worker) {
		s := &chaos.Stop{Restart: true, Grace: (p.ShutdownGrace + 10*time.Second).Milliseconds()}
		inject(t, c, s, w)
		stops[w.Slot()] = s
	}
	stop(first)
	second := waitLeader(t, c, p.RetryPeriod*11/10+slack, first.Identity())
	st, err := second.Status(observe(t))
	if err != nil {
		t.Fatal(err)
	}
	used := st.Term
	hold(t, 2*time.Second)
	stop(second)
	// Storage forgets; the workers come back with no memory of the terms.
	inject(t, c, rb, nil)
	for _, s := range stops {
		remove(t, c, s)
	}
	next := waitLeader(t, c, takeover(p))
	if st, err := next.Status(ctxFor(t, 5*time.Second)); err == nil && st.Term <= used {
		t.Errorf("after the rollback %s leads term %d; term %d was handed out before it: a term handed out twice (or going back)", next.Identity(), st.Term, used)
	} else if err == nil {
		t.Logf("term %d handed out before the rollback; %s leads term %d after it", used, next.Identity(), st.Term)
	}
	remove(t, c, rb)
}
