//go:build azure

package azure

import (
	"context"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/blobleader/blobleader/test/checker"
	"github.com/blobleader/blobleader/test/scenarios"
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

// ShardScenarios is the Azure suite's shard stage (at least the
// follower-killed scenario). TestOffline_ShardScenariosAreLocalOnes
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

// ShardJudging is how the shard stage judges a scenario with
// scenarios.JudgeShards: the Azure clock-skew tolerance, the incarnations
// started since the shards apply, a liveness window that allows for the
// sidecar's one-second states, storage reads retried (retryStorage), and
// the scenario report with extra (e.g. ARM operations and cost) written
// into out beside the shard timeline.
func ShardJudging(t *testing.T, c *Cluster, n int, name, out string, skew time.Duration, since time.Time, extra map[string]float64) scenarios.ShardJudging {
	p := c.Params()
	return scenarios.ShardJudging{
		Shards: n, Name: name, Out: out,
		Timeout:   10 * time.Minute,
		Window:    2*max(p.RenewInterval, p.RetryPeriod) + 3*time.Second, // sidecar states come every second
		ClockSkew: skew,
		Files:     func(files []string) []string { return IncarnationsSince(files, since) },
		Retry: func(ctx context.Context, what string, read func() error) error {
			return retryStorage(ctx, what, t.Logf, read)
		},
		Report: func(out string, run checker.Run, all checker.Result) {
			if files, err := WriteScenarioReport(out, name, run, all, extra); err != nil {
				t.Errorf("report: %v", err)
			} else {
				t.Logf("report: %s (%s)", files.HTML, files.JSON)
			}
		},
	}
}
