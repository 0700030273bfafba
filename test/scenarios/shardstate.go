package scenarios

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/blobleader/blobleader/chaos"
	"github.com/blobleader/blobleader/test/cluster"
	"github.com/blobleader/blobleader/worker/shard"
)

// Shard pool state edited from outside (docs/chaos.md#scenarios): the
// leader's assignment deleted, rolled back to an earlier copy, or
// corrupted while the pool runs. The coordinator owns the document: it must
// write it again above any version a member has seen, and the pool must
// keep its balance and failover bounds (judged by CheckShards from the
// shards' own events).
var (
	ShardsAssignmentDeleted    = ShardScenario{Name: "ShardsAssignmentDeleted", Workers: 2, Shards: 8, Run: shardsAssignmentDeleted}
	ShardsAssignmentRolledBack = ShardScenario{Name: "ShardsAssignmentRolledBack", Workers: 2, Shards: 8, Run: shardsAssignmentRolledBack}
	ShardsAssignmentCorrupted  = ShardScenario{Name: "ShardsAssignmentCorrupted", Workers: 3, Shards: 8, Run: shardsAssignmentCorrupted}
)

// repairBound is how long the coordinator takes to write a document it owns
// again after it went missing or bad: its next pass (P·1.1) lists the pool,
// reads the document and writes it, one request timeout each.
func repairBound(p cluster.Params) time.Duration {
	return p.RetryPeriod*11/10 + 3*p.RequestTimeout()
}

// shardsAssignmentDeleted: an operator deletes the assignment of a balanced
// pool whose members have all read it. The leader writes it again, and a
// worker that joins after it receives its share within the balance bound.
func shardsAssignmentDeleted(t *testing.T, c cluster.Cluster, n int) {
	p := c.Params()
	layout := shard.Layout{Blob: c.LockBlob()}
	waitLeader(t, c, takeover(p))
	waitBalanced(t, c, n, settle(p)+slack)
	waitStandbys(t, c, n, settle(p)+slack) // every member has read the version in force
	inject(t, c, &chaos.DeleteDocument{Blob: layout.Assignment()}, nil)
	waitAssignment(t, c, repairBound(p)+slack)
	joinBalanced(t, c, n)
}

// shardsAssignmentRolledBack: the assignment goes back to a copy taken
// before the last join (a lower version under the same term) while every
// member has read a later one. The pool must not freeze on the older
// version: a worker that joins afterwards receives its share within the
// balance bound.
func shardsAssignmentRolledBack(t *testing.T, c cluster.Cluster, n int) {
	p := c.Params()
	layout := shard.Layout{Blob: c.LockBlob()}
	waitLeader(t, c, takeover(p))
	waitBalanced(t, c, n, settle(p)+slack)
	waitStandbys(t, c, n, settle(p)+slack)
	rb := &chaos.RollbackDocument{Container: c.Storage(), Blob: layout.Assignment()}
	if err := rb.Snapshot(ctxFor(t, 30*time.Second)); err != nil {
		t.Fatal(err)
	}
	joinBalanced(t, c, n) // a later version, read by every member
	waitStandbys(t, c, n, settle(p)+slack)
	inject(t, c, rb, nil)
	joinBalanced(t, c, n)
}

// shardsAssignmentCorrupted: the assignment and the summary are cut in half
// (no longer JSON) in a balanced pool, and a follower is killed at once. Its
// shards must go to their standbys within the failover bound and the pool
// must be balanced over the two left within the balance bound; the leader
// writes both documents again.
func shardsAssignmentCorrupted(t *testing.T, c cluster.Cluster, n int) {
	p := c.Params()
	layout := shard.Layout{Blob: c.LockBlob()}
	leader := waitLeader(t, c, takeover(p))
	waitBalanced(t, c, n, settle(p)+slack)
	waitStandbys(t, c, n, settle(p)+slack)
	before := waitBalanced(t, c, n, settle(p)+slack)
	var victim cluster.Worker
	for _, w := range c.Workers() {
		if w.Identity() != leader.Identity() {
			victim = w
		}
	}
	inject(t, c, &chaos.CorruptDocument{Blob: layout.Assignment()}, nil)
	inject(t, c, &chaos.CorruptDocument{Blob: layout.Summary()}, nil)
	departs(t, c, n, &chaos.Crash{}, victim, before)
	waitAssignment(t, c, slack) // long written again by now
	sumBound := 5*p.RetryPeriod + repairBound(p) + slack
	wt := waitOn(c, sumBound)
	for {
		sum, err := shard.ReadSummary(ctxFor(t, 5*time.Second), c.Storage(), c.LockBlob())
		if err == nil && sum != nil {
			break
		}
		if wt.over() {
			wt.fatal(t, "the summary was not readable again within %v of the corruption (last: %v, %v)", sumBound, sum, err)
		}
		hold(t, 200*time.Millisecond)
	}
}

// joinBalanced starts one worker and waits for the pool to be balanced
// within the balance bound with only shards to the joiner moved, then for
// the checker's settle window.
func joinBalanced(t *testing.T, c cluster.Cluster, n int) {
	t.Helper()
	p := c.Params()
	before := waitBalanced(t, c, n, slack)
	added, err := c.Start(ctxFor(t, time.Minute), 1, cluster.Args("--shards", fmt.Sprint(n)))
	if err != nil {
		t.Fatal(err)
	}
	joined := time.Now()
	after := waitBalanced(t, c, n, settle(p)+slack)
	for s, o := range before {
		if after[s] != o && after[s] != added[0].Identity() {
			// A holder moves a shard it keeps only when its lease lapsed:
			// no renew answered for D − RI, a stall's doing or a bug's.
			starved(t, c, fmt.Sprintf("shard %d moved from %s to %s on the join of %s: only shards to the joiner may move (before %v, after %v)", s, o, after[s], added[0].Identity(), before, after),
				joined, time.Now(), p.RenewDeadline-p.RenewInterval)
		}
	}
	t.Logf("%s received its share %v after joining", added[0].Identity(), time.Since(joined).Round(time.Millisecond))
	settleAfter(t, c, joined)
}

// waitAssignment waits until the assignment blob holds a valid assignment
// again, and fails t after timeout.
func waitAssignment(t *testing.T, c cluster.Cluster, timeout time.Duration) {
	t.Helper()
	name := shard.Layout{Blob: c.LockBlob()}.Assignment()
	wt := waitOn(c, timeout)
	start := time.Now()
	var last string
	for {
		body, err := readBlob(ctxFor(t, 5*time.Second), c, name)
		var a shard.Assignment
		if err == nil && json.Unmarshal(body, &a) == nil && a.Term > 0 && len(a.Owners) > 0 {
			t.Logf("the assignment is written again after %v (term %d, version %d)", time.Since(start).Round(time.Millisecond), a.Term, a.Version)
			return
		}
		last = fmt.Sprintf("%q (%v)", body, err)
		if wt.over() {
			wt.fatal(t, "the assignment was not written again within %v; last read: %s", timeout, last)
		}
		hold(t, 100*time.Millisecond)
	}
}

// readBlob reads a whole blob; a missing blob is an error.
func readBlob(ctx context.Context, c cluster.Cluster, name string) ([]byte, error) {
	resp, err := c.Storage().NewBlobClient(name).DownloadStream(ctx, nil)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	return io.ReadAll(resp.Body)
}
