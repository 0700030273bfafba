package scenarios

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/blobleader/blobleader/test/checker"
	"github.com/blobleader/blobleader/test/cluster"
)

// A worker whose history file is gone is not skipped: the run fails with an
// evidence violation naming it: a checker that saw no evidence has not
// passed.
func TestChecker_FailsAStartedWorkerWithoutHistory(t *testing.T) {
	t.Parallel()
	c := Local(t, 2)
	p := c.Params()
	leader := waitLeader(t, c, takeover(p))
	h, err := c.History(ctxFor(t, time.Minute), 0)
	if err != nil {
		t.Fatal(err)
	}
	// A follower's: nothing else in the run is wrong, so only the missing
	// evidence can fail it.
	lost := h.Workers[0]
	if lost.Identity == leader.Identity() {
		lost = h.Workers[1]
	}
	if err := os.Remove(lost.History); err != nil {
		t.Fatal(err)
	}
	_, res := Judge(t, c, reportName(t))
	var found bool
	for _, v := range res.Violations {
		found = found || (v.Invariant == checker.InvEvidence && strings.Contains(v.Message, "worker "+lost.Identity+" was started but left no history"))
	}
	if !found || res.Outcome() != checker.VerdictFail {
		t.Fatalf("the history of %s was removed, yet verdict %s, violations %v", lost.Identity, res.Outcome(), res.Violations)
	}
	t.Logf("caught as expected: %v", res.Err())
}

// A failed run keeps azurite-probe.jsonl and cpu-probe.jsonl next to the
// histories, and its log says how the machine ran and whether storage
// answered the harness's own probe (here it did: no stall to report, and
// the line says so rather than saying nothing).
func TestHarness_FailedRunKeepsTheStorageProbe(t *testing.T) {
	t.Parallel()
	c := cluster.NewLocal(t, cluster.LocalConfig{Binary: "no-worker-is-started"})
	if _, err := c.StorageProbe().Await(ctxFor(t, 20*time.Second), func(s cluster.ProbeSummary) bool { return s.Probes >= 2 }); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "kept")
	keepFailedRun(t, c, dir)
	b, err := os.ReadFile(filepath.Join(dir, "azurite-probe.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	for i, l := range lines {
		var r cluster.ProbeRecord
		if err := json.Unmarshal([]byte(l), &r); err != nil || r.Start.IsZero() || r.Status == 0 {
			t.Errorf("azurite-probe.jsonl line %d %q: want an answered probe (%v)", i+1, l, err)
		}
	}
	if len(lines) < 2 {
		t.Errorf("azurite-probe.jsonl: %d lines after ≥ 2 probes", len(lines))
	}
	if b, err := os.ReadFile(filepath.Join(dir, "cpu-probe.jsonl")); err != nil || !strings.Contains(string(b), `"wakes":`) {
		t.Errorf("cpu-probe.jsonl: %v, %q; want its counts line first", err, b)
	}
	var logged []string
	explainStorage(func(format string, args ...any) { logged = append(logged, fmt.Sprintf(format, args...)) }, c)
	if len(logged) != 4 || !strings.HasPrefix(logged[0], "cpu probe: ") ||
		!strings.HasPrefix(logged[1], "processes at the failure: Azurite (pid ") || !strings.HasSuffix(logged[1], ") runs") ||
		!strings.HasPrefix(logged[2], "storage probe: ") || !strings.Contains(logged[3], "answered every probe within 1s") {
		t.Errorf("failed run's machine lines: %q; want the CPU probe's, the processes', then the storage probe's", logged)
	}
}

// A failed run's evidence goes beside its reports when BLOBLEADER_CHAOS_OUT
// is set, else under BLOBLEADER_CHAOS_KEEP_FAILED (make test's out/failed),
// else nowhere (the log's tails are all there is).
func TestHarness_FailedRunDirFollowsTheEnvironment(t *testing.T) {
	for _, tt := range []struct {
		out, keep string
		want      string // "": not kept
	}{
		{"/o", "/k", "/o/" + t.Name()},
		{"", "/k", "/k/" + t.Name()},
		{"", "", ""},
	} {
		t.Setenv(EnvOut, tt.out)
		t.Setenv(EnvKeepFailed, tt.keep)
		dir, ok := failedRunDir(t)
		if ok != (tt.want != "") || dir != tt.want {
			t.Errorf("OUT=%q KEEP_FAILED=%q: failedRunDir = %q, %v; want %q", tt.out, tt.keep, dir, ok, tt.want)
		}
	}
}
