package scenarios

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/blobleader/blobleader/chaos"
	"github.com/blobleader/blobleader/test/checker"
	"github.com/blobleader/blobleader/test/cluster"
	"github.com/blobleader/blobleader/test/report"
	"github.com/blobleader/blobleader/worker/shard"
)

// The seeded soak in shard mode: a --shards pool under the soak's
// fault mix plus members joining and leaving, judged by the election's rules
// and by CheckShards.

// ShardSoakConfig is the shard soak's pool: N shards over Workers workers at
// the start; joins and leaves keep the live workers within [MinLive, MaxLive].
type ShardSoakConfig struct {
	Shards           int
	Workers          int
	MinLive, MaxLive int
}

// shardSoakActions is the election soak's mix without the deletions, plus
// a membership step.
//
// The deletions act on the election's lock blob or its container. Deleting
// the container also deletes every shard lease, member lease and shard
// ledger: the ledgers' gap-free rule (shard S2) could not hold, and the shard
// checker's per-shard L1 would read a deleted election lock as a fault on
// the shards' owners. Breaking the election's lease stays: the shard checker
// leaves it to the election's rules, and a leader change alone must move no
// shard (stickiness).
//
// The membership step starts a new worker (a join) or stops one gracefully
// for good (a leave), then holds for the balance bound plus a second with no
// other fault, so the checker can judge balance and stickiness after it.
func shardSoakActions(p cluster.Params, cfg ShardSoakConfig, moves map[string]int) []action {
	var out []action
	for _, a := range soakActions(p) {
		if a.name == "delete_blob" || a.name == "delete_container" {
			continue
		}
		out = append(out, a)
	}
	// Slow member reads: the coordinator's reads of the members' reports
	// held below the request timeout; it must keep its term (the checker's
	// keep rule: no watchdog step-down during the fault without a renew
	// failing).
	rt := p.RequestTimeout()
	out = append(out, action{"slow_member_reads", 2, 3 * time.Second, p.LeaseDuration + 5*time.Second, false, func(s *soak) []chaos.Fault {
		prefix := s.c.LockBlob() + "-shards/reports/"
		return []chaos.Fault{s.bind(&chaos.SlowReads{Prefix: prefix, Delay: s.fraction(0.5, 0.9, rt)}, s.leaderOrAny())}
	}})
	out = append(out, poolStateActions(cfg)...)
	grace := (p.ShutdownGrace + 10*time.Second).Milliseconds()
	settled := settle(p) + time.Second
	return append(out, action{"member", 3, settled, settled, false, func(s *soak) []chaos.Fault {
		live := s.running()
		join := len(live) < cfg.MaxLive && (len(live) <= cfg.MinLive || s.rng.IntN(2) == 0)
		if !join && len(live) <= cfg.MinLive {
			return nil
		}
		if join {
			ctx := ctxFor(s.t, time.Minute)
			ws, err := s.c.Start(ctx, 1, cluster.Args("--shards", fmt.Sprint(cfg.Shards)))
			if err != nil {
				s.t.Errorf("soak: join: %v", err)
				return nil
			}
			moves["join"]++
			s.t.Logf("soak: %s joins (%d live)", ws[0].Identity(), len(live)+1)
			return nil
		}
		moves["leave"]++
		w := s.any()
		s.t.Logf("soak: %s leaves (%d live)", w.Identity(), len(live)-1)
		return []chaos.Fault{s.bind(&chaos.Stop{Grace: grace}, w)}
	}})
}

// poolStateActions are the operator's edits to the pool's state in the
// shard soak's mix: the assignment deleted, rolled back to the copy taken at
// the previous rollback step, or corrupted (or the summary corrupted) — the
// leader writes it again above every version seen —, and a shard's ledger
// segment re-uploaded as a block blob (its owner hands the shard to its
// standby, which continues the ledger past it).
func poolStateActions(cfg ShardSoakConfig) []action {
	var saved *chaos.RollbackDocument // the copy the next rollback goes back to
	return []action{
		{"delete_assignment", 1, 0, 0, false, func(s *soak) []chaos.Fault {
			name := shard.Layout{Blob: s.c.LockBlob()}.Assignment()
			if !blobExists(s, name) {
				return nil
			}
			return []chaos.Fault{s.bind(&chaos.DeleteDocument{Blob: name}, nil)}
		}},
		{"assignment_rollback", 1, 0, 0, false, func(s *soak) []chaos.Fault {
			name := shard.Layout{Blob: s.c.LockBlob()}.Assignment()
			back := saved
			saved = &chaos.RollbackDocument{Container: s.c.Storage(), Blob: name}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := saved.Snapshot(ctx); err != nil {
				saved = nil
			}
			if back == nil {
				return nil // the first one only takes the copy
			}
			return []chaos.Fault{s.bind(back, nil)}
		}},
		{"corrupt_document", 1, 0, 0, false, func(s *soak) []chaos.Fault {
			l := shard.Layout{Blob: s.c.LockBlob()}
			name := []string{l.Assignment(), l.Summary()}[s.rng.IntN(2)]
			if !blobExists(s, name) {
				return nil
			}
			return []chaos.Fault{s.bind(&chaos.CorruptDocument{Blob: name, DropMetadata: s.rng.IntN(2) == 0}, nil)}
		}},
		{"shard_ledger_blob_type", 1, 0, 0, false, func(s *soak) []chaos.Fault {
			name := shard.Layout{Blob: s.c.LockBlob()}.Ledger(s.rng.IntN(cfg.Shards))
			if !hasSegments(s, name) {
				return nil
			}
			return []chaos.Fault{s.bind(&chaos.LedgerBlobType{Ledger: name}, nil)}
		}},
	}
}

// blobExists reports whether the blob is there (errors read as no).
func blobExists(s *soak, name string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := s.c.Storage().NewBlobClient(name).GetProperties(ctx, nil)
	return err == nil
}

// awaitStandbys waits, without failing, until the leader's assignment names
// a standby for every shard and every worker has had time to read it (the
// same wait as waitStandbys). A fault on a shard that has no standby yet,
// just after it moved, is outside the per-shard L1 bounds the checker
// applies (docs/architecture.md, "Shards"), so each step starts from a pool
// with standbys when the pool gets there within the balance bound.
func awaitStandbys(s *soak, n int) {
	deadline := time.Now().Add(settle(s.p) + slack)
	for time.Now().Before(deadline) {
		if l, err := s.c.FindLeader(time.Until(deadline)); err == nil {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			st, err := l.Status(ctx)
			cancel()
			if err == nil && st.Assignment != nil && len(st.Assignment.Standbys) == n && !slices.Contains(st.Assignment.Standbys, "") {
				hold(s.t, 2*(s.p.RetryPeriod*11/10+s.p.RequestTimeout()))
				return
			}
		}
		hold(s.t, 200*time.Millisecond)
	}
	s.t.Logf("soak: the assignment did not name a standby for every shard within %v; the next step starts anyway", settle(s.p)+slack)
}

// ShardSoak runs the seeded soak on a shard pool c (started with --shards
// cfg.Shards) and judges it with the election's rules and CheckShards. It
// writes <name>.txt (the summary `make chaos` prints), the election's report
// and the shard timeline to the output directory, and returns the verdicts.
func ShardSoak(t *testing.T, c cluster.Cluster, sc SoakConfig, cfg ShardSoakConfig, name string) (checker.Result, checker.ShardResult) {
	t.Helper()
	p := c.Params()
	// Evidence before the first fault: a leader and a balanced pool.
	waitLeader(t, c, takeover(p))
	waitBalanced(t, c, cfg.Shards, settle(p)+slack)
	moves := map[string]int{}
	steps := soakSteps(t, c, sc, shardSoakActions(p, cfg, moves), func(s *soak) { awaitStandbys(s, cfg.Shards) })
	quietTail(t, c, cfg, moves)
	srun, res, sres := JudgeShards(t, c, ShardJudging{Shards: cfg.Shards, Name: name})
	if files, err := report.Write(OutDir(t), name, srun.Run, res); err != nil {
		t.Errorf("report: %v", err)
	} else {
		t.Logf("report: %s (%s)", files.HTML, files.JSON)
	}
	text := ShardSoakText(srun, res, sres, moves) + withStorageProbe(c)
	t.Logf("soak steps: %v", steps)
	t.Log("soak summary:\n" + text)
	writeSoakSummary(t, name, sc, steps, text)
	if d := os.Getenv(EnvOut); d != "" {
		f, err := os.Create(filepath.Join(d, name+"-shards.json"))
		if err == nil {
			err = report.WriteJSON(f, ShardSummary(srun, sres))
			f.Close()
		}
		if err != nil {
			t.Errorf("shard summary: %v", err)
		}
	}
	return res, sres
}

// ShardSummary is the report summary of the shard rules: the shards'
// ownership intervals as terms, every shard's failovers by fault kind, and
// the shard violations.
func ShardSummary(srun checker.ShardRun, sres checker.ShardResult) report.Summary {
	var merged checker.Result
	for s := range srun.Shards {
		r := sres.PerShard[s]
		merged.Intervals = append(merged.Intervals, r.Intervals...)
		merged.Failovers = append(merged.Failovers, r.Failovers...)
	}
	merged.Verdict = sres.Verdict
	run := srun.Run
	run.Ledger = nil
	for _, es := range srun.Ledgers {
		run.Ledger = append(run.Ledger, es...)
	}
	sum := report.Summarize(run, merged)
	sum.Extra = map[string]float64{"shards": float64(srun.Shards), "balance_checks": float64(len(sres.Balance))}
	return sum
}

// ShardSoakText is the shard soak's summary: the election's figures, then
// the shards' (failovers of a shard after a fault that hit its owner; terms
// are shard ownerships, ledger entries those of every shard's ledger), then
// every balance judgement with its moves against the minimum.
func ShardSoakText(srun checker.ShardRun, res checker.Result, sres checker.ShardResult, moves map[string]int) string {
	var b strings.Builder
	b.WriteString("election:\n")
	b.WriteString(SummaryText(report.Summarize(srun.Run, res)))
	fmt.Fprintf(&b, "shards (N = %d; %d joins, %d leaves):\n", srun.Shards, moves["join"], moves["leave"])
	b.WriteString(SummaryText(ShardSummary(srun, sres)))
	sticky := 0
	for _, bc := range sres.Balance {
		if bc.Minimum >= 0 {
			sticky++
		}
	}
	fmt.Fprintf(&b, "balance judged %d times (stickiness %d of them):\n", len(sres.Balance), sticky)
	for _, bc := range sres.Balance {
		fmt.Fprintf(&b, "- after %s: members %v own %v; %d moves (minimum %d)\n",
			bc.Change.Format("15:04:05.000"), bc.Members, bc.Counts, bc.Moves, bc.Minimum)
	}
	return b.String()
}

// quietTail ends every shard soak with the evidence its balance rule needs,
// whatever DURATION drew: a membership change (a join, or a graceful leave
// at MaxLive) followed by the balance bound plus a second with no other
// change or fault. A short schedule could otherwise end without one, and
// the checker would fail the run for want of evidence of balance.
func quietTail(t *testing.T, c cluster.Cluster, cfg ShardSoakConfig, moves map[string]int) {
	t.Helper()
	p := c.Params()
	if l, err := c.FindLeader(takeover(p)); err != nil {
		t.Logf("soak tail: no leader before the tail (%v); the checker judges", err)
	} else {
		t.Logf("soak tail: %s leads", l.Identity())
	}
	var live []cluster.Worker
	for _, w := range c.Workers() {
		if w.Running() {
			live = append(live, w)
		}
	}
	if len(live) < cfg.MaxLive {
		ws, err := c.Start(ctxFor(t, time.Minute), 1, cluster.Args("--shards", fmt.Sprint(cfg.Shards)))
		if err != nil {
			t.Fatalf("soak tail: join: %v", err)
		}
		moves["join"]++
		t.Logf("soak tail: %s joins, then %v quiet", ws[0].Identity(), settle(p)+time.Second)
	} else {
		w := live[len(live)-1]
		stop := &chaos.Stop{Grace: (p.ShutdownGrace + 10*time.Second).Milliseconds()}
		inject(t, c, stop, w)
		remove(t, c, stop)
		moves["leave"]++
		t.Logf("soak tail: %s leaves, then %v quiet", w.Identity(), settle(p)+time.Second)
	}
	hold(t, settle(p)+time.Second)
}
