package scenarios

import (
	"encoding/json"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/blobleader/blobleader/chaos"
	"github.com/blobleader/blobleader/test/cluster"
	"github.com/blobleader/blobleader/worker/shard"
	"github.com/blobleader/blobleader/worker/storage"
)

// ShardsStoredTermsPlanted: a term above the lock's planted in the pool's
// documents — the assignment (in its JSON and metadata, as an upload of
// another pool's copy makes it) and the summary (in its metadata only, as
// `az storage blob metadata update` makes it) — of a balanced pool
// (docs/architecture.md#shards). A term read from a document is data, never
// an order: the leader writes each document again under its own term,
// counts the repair, and keeps leading; the pool stays balanced and no
// shard moves (judged by CheckShards from the shards' own events).
var ShardsStoredTermsPlanted = ShardScenario{Name: "ShardsStoredTermsPlanted", Workers: 3, Shards: 8, Run: shardsStoredTermsPlanted}

func shardsStoredTermsPlanted(t *testing.T, c cluster.Cluster, n int) {
	p := c.Params()
	layout := shard.Layout{Blob: c.LockBlob()}
	joined := time.Now() // the workers started just before Run
	leader := waitLeader(t, c, takeover(p))
	waitBalanced(t, c, n, settle(p)+slack)
	waitStandbys(t, c, n, settle(p)+slack)
	// The checker's evidence of balance: the joins, then its settle window
	// with no fault in it (the planted terms must move nothing after it).
	settleAfter(t, c, joined)
	before := waitBalanced(t, c, n, slack)
	st, err := leader.Status(observe(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, step := range []struct {
		f     *chaos.PlantedTerm
		bound time.Duration
	}{
		{&chaos.PlantedTerm{Blob: layout.Assignment()}, repairBound(p)},
		{&chaos.PlantedTerm{Blob: layout.Summary(), MetadataOnly: true}, 5*p.RetryPeriod + repairBound(p)},
	} {
		inject(t, c, step.f, nil)
		took := waitDocumentTerm(t, c, step.f.Blob, st.Term, step.bound+slack)
		t.Logf("%s: term %d planted above the lock's %d; written again under %d after %v", step.f.Blob, step.f.Planted(), st.Term, st.Term, took.Round(time.Millisecond))
		remove(t, c, step.f) // nothing to undo once repaired
	}
	// The leader never stepped down: same identity, same term, over a few
	// more polls.
	for range 10 {
		now, err := leader.Status(observe(t))
		if err != nil || now.Role != "leader" || now.Term != st.Term {
			t.Fatalf("%s stopped leading term %d over a planted document term (now %+v, %v)", leader.Identity(), st.Term, now, err)
		}
		hold(t, p.RetryPeriod/2) // sampling HTTP: no event to await across processes
	}
	for _, object := range []string{shard.ObjectAssignment, shard.ObjectSummary} {
		name := fmt.Sprintf(`blobleader_repairs_total{cause=%q,object=%q}`, shard.CauseTermAboveLock, object)
		if v := metricValue(t, leader, name); v < 1 {
			t.Errorf("%s on the leader = %v, want at least 1", name, v)
		}
	}
	after := waitBalanced(t, c, n, slack)
	for s, o := range before {
		if after[s] != o {
			t.Errorf("shard %d moved from %s to %s over planted document terms: nothing may move", s, o, after[s])
		}
	}
}

// waitDocumentTerm waits until the pool document name holds JSON whose
// "term", and whose metadata term, are term, and returns how long it took.
func waitDocumentTerm(t *testing.T, c cluster.Cluster, name string, term int64, timeout time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	for {
		var last string
		resp, err := c.Storage().NewBlobClient(name).DownloadStream(ctxFor(t, 5*time.Second), nil)
		if err == nil {
			var doc struct {
				Term int64 `json:"term"`
			}
			body, rerr := io.ReadAll(resp.Body)
			resp.Body.Close()
			mt, _ := storage.Term(resp.Metadata)
			if rerr == nil && json.Unmarshal(body, &doc) == nil && doc.Term == term && mt == term {
				return time.Since(start)
			}
			last = fmt.Sprintf("%s (metadata term %d)", body, mt)
		} else {
			last = err.Error()
		}
		if time.Since(start) > timeout {
			t.Fatalf("%s was not written again under the leader's term %d within %v; last: %s", name, term, timeout, last)
		}
		hold(t, 100*time.Millisecond)
	}
}
