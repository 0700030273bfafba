//go:build azure

package azure

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/blobleader/blobleader/test/checker"
	"github.com/blobleader/blobleader/test/report"
	"github.com/blobleader/blobleader/test/scenarios"
	"github.com/blobleader/blobleader/worker/shard"
)

// ShardScenario is one shard scenario of the local suite as the Azure suite
// runs it, in its "shards" stage: the deployment's groups are applied again
// with the Terraform variable `shards` (BLOBLEADER_SHARDS on every group),
// which replaces them with shard-mode workers. Skip, when set, is why it
// cannot run on Azure.
type ShardScenario struct {
	scenarios.ShardScenario
	Skip string
}

// ShardScenarios is the Azure suite's shard stage (issue 13 asks for at
// least the follower-killed scenario). TestOffline_ShardScenariosAreLocalOnes
// keeps each one registered in the local suite. They share one apply, so
// they share N.
func ShardScenarios() []ShardScenario {
	return []ShardScenario{
		{ShardScenario: scenarios.ShardsFollowerKilled},
	}
}

// IncarnationsSince keeps the history files of incarnations started at or
// after since: the history blobs are named <identity>/<process start, unix
// ns>-<n>.jsonl (worker/history), and a group replaced by the shards apply
// keeps its identity, so its election-mode incarnations are told apart by
// their start. A file whose name has no start is kept (the checker then
// sees it rather than losing it).
func IncarnationsSince(files []string, since time.Time) []string {
	var out []string
	for _, f := range files {
		base := filepath.Base(f)
		i := strings.IndexByte(base, '-')
		if i > 0 {
			if ns, err := strconv.ParseInt(base[:i], 10, 64); err == nil && time.Unix(0, ns).Before(since) {
				continue
			}
		}
		out = append(out, f)
	}
	return out
}

// JudgeShards is Judge for the shard stage: the election's rules on the
// election's events and CheckShards on the shard events and the shards'
// ledgers, with the Azure clock-skew tolerance, on the incarnations started
// since the shards apply. It writes the report (<name>.html/.json) and the
// shard timeline (<name>-shards.svg) into out.
func JudgeShards(t *testing.T, c *Cluster, n int, name, out string, skew time.Duration, since time.Time, extra map[string]float64) (checker.ShardRun, checker.Result, checker.ShardResult) {
	t.Helper()
	p := c.Params()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	if err := c.Heal(ctx); err != nil {
		t.Errorf("heal: %v", err)
	}
	window := 2*max(p.RenewInterval, p.RetryPeriod) + 3*time.Second // sidecar states come every second
	h, err := c.History(ctx, window)
	if err != nil {
		t.Fatalf("history: %v", err)
	}
	h.Files = IncarnationsSince(h.Files, since)
	var run checker.Run
	if err := retryStorage(ctx, "collect the run", t.Logf, func() (err error) { run, err = scenarios.Collect(ctx, c, h); return err }); err != nil {
		t.Fatalf("collect run: %v", err)
	}
	run.Ledger = nil // in shard mode the election has no ledger: the leader's task coordinates
	cp := scenarios.CheckerParams(p)
	cp.ClockSkew = skew
	res, err := checker.Check(run, cp)
	if err != nil {
		t.Fatalf("checker: %v", err)
	}
	srun := checker.ShardRun{Run: run, Shards: n, Ledgers: map[int][]checker.LedgerEntry{}}
	layout := shard.Layout{Blob: c.LockBlob()}
	for s := range n {
		var es []checker.LedgerEntry
		if err := retryStorage(ctx, "read shard ledger", t.Logf, func() (err error) {
			es, err = scenarios.ReadLedger(ctx, c.Storage(), layout.Ledger(s))
			return err
		}); err != nil {
			t.Fatalf("shard %d ledger: %v", s, err)
		}
		srun.Ledgers[s] = es
	}
	sres, err := checker.CheckShards(srun, checker.ShardParams{Params: cp})
	if err != nil {
		t.Fatalf("shard checker: %v", err)
	}
	all := res
	all.Violations = append(append([]checker.Violation(nil), res.Violations...), sres.Violations...)
	if files, err := WriteScenarioReport(out, name, run, all, extra); err != nil {
		t.Errorf("report: %v", err)
	} else {
		t.Logf("report: %s (%s)", files.HTML, files.JSON)
	}
	if f, err := os.Create(filepath.Join(out, name+"-shards.svg")); err != nil {
		t.Errorf("shard timeline: %v", err)
	} else {
		if err := report.WriteShardSVG(f, srun, sres); err != nil {
			t.Errorf("shard timeline: %v", err)
		}
		f.Close()
		t.Logf("shard timeline: %s", f.Name())
	}
	if len(run.Events) > 0 {
		t.Logf("shard ownership over time:\n%s", checker.ShardLanes(sres, run.Events[0].T))
	}
	for _, b := range sres.Balance {
		t.Logf("balance after the change at %s: members %v own %v; %d moves (minimum %d)", b.Change.Format("15:04:05.000"), b.Members, b.Counts, b.Moves, b.Minimum)
	}
	for s := range n {
		for _, fo := range sres.PerShard[s].Failovers {
			t.Logf("shard %d failover after %s on %s: %v (bound %v, basis %s)", s, fo.Kind, fo.Target, fo.Duration.Round(time.Millisecond), fo.Bound, fo.Basis)
		}
	}
	return srun, res, sres
}
