//go:build azure

package azure

import (
	"context"
	"testing"
	"time"

	"github.com/blobleader/blobleader/chaos"
	"github.com/blobleader/blobleader/test/checker"
	"github.com/blobleader/blobleader/test/cluster"
	"github.com/blobleader/blobleader/test/report"
	"github.com/blobleader/blobleader/test/scenarios"
)

// Scenario is one scenario of the local suite as the Azure suite runs it:
// Skip, when set, is why it cannot run on Azure (docs/testing-on-azure.md
// lists every skip with the same reason).
type Scenario struct {
	scenarios.Scenario
	Skip string
}

// Scenarios is the Azure suite: the local suite's scenarios, in its order,
// with the documented skips. TestOffline_SameScenariosAsTheLocalSuite keeps
// it equal to what test/scenarios registers.
func Scenarios() []Scenario {
	return []Scenario{
		{Scenario: scenarios.LeaderKilled},
		{Scenario: scenarios.LeaderStoppedGracefully},
		{Scenario: scenarios.PausedLeaderStepsDown, Skip: chaos.ACIPauseReason},
		{Scenario: scenarios.PartitionedLeaderStepsDown},
		{Scenario: scenarios.LatencyBelowRequestTimeout},
		{Scenario: scenarios.LatencyAboveRequestTimeout},
		{Scenario: scenarios.RandomResetsOnAllWorkers},
		{Scenario: scenarios.StorageOutage},
		{Scenario: scenarios.OperatorBreaksLease},
		{Scenario: scenarios.RollingRestart},
		{Scenario: scenarios.LateReleaseFromEndedLeadership, Skip: SkipRequestProxy},
		{Scenario: scenarios.LockBlobDeleted},
		{Scenario: scenarios.LockContainerDeleted, Skip: SkipContainerRecreate},
		{Scenario: scenarios.LostAnswersOnAcquireAndTermWrite, Skip: SkipRequestProxy},
		{Scenario: scenarios.StorageRefusesTheLeader, Skip: SkipRequestProxy},
		{Scenario: scenarios.OperatorWritesBadMetadata},
		{Scenario: scenarios.StorageRolledBack},
		{Scenario: scenarios.BlockedOutputLeaderStepsDown, Skip: SkipOutputPipe},
		{Scenario: scenarios.LedgerSegmentReplaced},
		{Scenario: scenarios.LedgerPoisoned, Skip: SkipWorkerMetrics},
	}
}

// Why the request-level and container scenarios do not run on Azure
// (docs/testing-on-azure.md lists them).
const (
	SkipRequestProxy      = "needs the HTTP-aware request proxy (late delivery, lost response) between the worker and storage; the Azure sidecar proxies bytes only"
	SkipOutputPipe        = "needs the worker's stdout/stderr as a pipe the harness holds and can stop draining; on ACI the container runtime owns the output"
	SkipWorkerMetrics     = "reads each worker's /metrics (the repairs and the no-progress step-down counters), which the harness reaches only on local workers; on Azure the no_progress alert reads the same step-downs from Log Analytics"
	SkipContainerRecreate = "Azure refuses to recreate a deleted container's name for a while (ContainerBeingDeleted), so no worker can lead within the one-poll bound the scenario checks"
)

// Judge is scenarios.Judge with the Azure clock-skew tolerance: it heals the
// cluster, collects the run (histories from storage, the ledger, the
// cumulative fault timeline, liveness), checks it and writes the report into
// out, with extra (the ARM figures) in its summary. The run covers the whole
// deployment so far, so a later scenario is judged together with every
// earlier one on the same workers.
func Judge(t *testing.T, c cluster.Cluster, name, out string, skew time.Duration, extra map[string]float64) (checker.Run, checker.Result, report.Files) {
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
	var run checker.Run
	// The ledger read too survives a lingering 403 after an outage.
	if err := retryStorage(ctx, "collect the run (ledger)", t.Logf, func() (err error) { run, err = scenarios.Collect(ctx, c, h); return err }); err != nil {
		t.Fatalf("collect run: %v", err)
	}
	cp := scenarios.CheckerParams(p)
	cp.ClockSkew = skew
	res, err := checker.Check(run, cp)
	if err != nil {
		t.Fatalf("checker: %v", err)
	}
	files, err := WriteScenarioReport(out, name, run, res, extra)
	if err != nil {
		t.Errorf("report: %v", err)
	} else {
		t.Logf("report: %s (%s)", files.HTML, files.JSON)
	}
	s := report.Summarize(run, res)
	t.Logf("run: %d events, %d terms, %d ledger entries, faults %v, %d violations (clock skew tolerance %v)", s.Events, s.Terms, s.LedgerEntries, s.FaultsByKind, s.Violations, skew)
	for _, fo := range res.Failovers {
		t.Logf("failover after %s on %s: %v (bound %v, basis %s)", fo.Kind, fo.Target, fo.Duration.Round(time.Millisecond), fo.Bound, fo.Basis)
	}
	return run, res, files
}
