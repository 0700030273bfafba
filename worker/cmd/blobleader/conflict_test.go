package main

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/blobleader/blobleader/worker/azuritetest"
)

// conflictBound is how long a conflicting set-up may go unreported: the
// report waits out L + 2·P·1.1 + 2 request timeouts (a lease a contender
// that is gone left behind expires in L), plus a poll and slack for a busy
// machine.
const conflictBound = 15*time.Second + 2200*time.Millisecond + 4*time.Second + 10*time.Second

// awaitConflict waits until the worker at base reports a set-up conflict of
// kind: a setup_conflict log line that names both sides (want each appear
// in it), /readyz 503 naming it (and /healthz 200: a restart does not cure
// it), and blobleader_setup_conflict 1.
func awaitConflict(t *testing.T, base, logPath, kind string, want ...string) {
	t.Helper()
	line := awaitLogLine(t, logPath, "setup_conflict", conflictBound, func(l map[string]any) bool { return l["kind"] == kind })
	requireFields(t, line, map[string]string{"identity": "string", "kind": "string", "holder": "string",
		"holder_mode": "string", "mode": "string", "reason": "string", "level": "string"})
	text := strings.Join([]string{line["holder"].(string), line["holder_mode"].(string), line["mode"].(string), line["reason"].(string)}, " | ")
	for _, w := range want {
		if !strings.Contains(text, w) {
			t.Fatalf("setup_conflict line %v does not name %q", line, w)
		}
	}
	if line["level"] != "WARN" {
		t.Fatalf("setup_conflict line %v: level %v, want WARN", line, line["level"])
	}
	waitFor(t, "after the setup_conflict line, /readyz 503 naming "+kind+", /healthz 200 and blobleader_setup_conflict 1 in /metrics", 5*time.Second, func() (bool, string) {
		rc, rbody := probeURL(t, base+"/readyz")
		hc, hbody := probeURL(t, base+"/healthz")
		_, metrics := probeURL(t, base+"/metrics")
		return rc == http.StatusServiceUnavailable && strings.Contains(rbody, kind) && hc == http.StatusOK && strings.Contains(metrics, "\nblobleader_setup_conflict 1\n"),
			fmt.Sprintf("/readyz %d %q, /healthz %d %q", rc, rbody, hc, hbody)
	})
}

// awaitLeader waits until the worker at base leads.
func awaitLeader(t *testing.T, base string) {
	t.Helper()
	waitFor(t, base+" leading", 20*time.Second, func() (bool, string) {
		st := getStatus(t, base)
		return st["role"] == "leader", fmt.Sprint(st)
	})
}

// Set-ups that cannot work together are loud (docs/architecture.md,
// "Conflicting set-ups"): a second process with the same identity; a `run`
// supervisor and a worker on one lock; pools of different --shards.
func TestWorker_ConflictingSetUpsAreReported(t *testing.T) {
	t.Parallel()
	az := azuritetest.StartT(t)
	conn := az.ConnectionString()

	t.Run("same identity twice", func(t *testing.T) {
		t.Parallel()
		first, _, _, _ := startLogging(t, conn, "dup", nil, []string{"--container", "dup"})
		awaitLeader(t, first)
		second, log2, _, _ := startLogging(t, conn, "dup", nil, []string{"--container", "dup"})
		awaitConflict(t, second, log2, "identity", "dup")
		if code, _ := probeURL(t, first+"/healthz"); code != http.StatusOK {
			t.Fatalf("the leading duplicate's /healthz = %d; the follower reports the conflict, the leader keeps working", code)
		}
	})

	t.Run("run and worker on one lock", func(t *testing.T) {
		t.Parallel()
		worker, _, _, _ := startLogging(t, conn, "plain", nil, []string{"--container", "mixed"})
		awaitLeader(t, worker)
		sup, logRun, _, _ := startLogging(t, conn, "supervisor", []string{"run"}, []string{"--container", "mixed", "--", "sleep", "1000"})
		awaitConflict(t, sup, logRun, "mode", "plain", "worker", "run")
	})

	t.Run("pools of different sizes", func(t *testing.T) {
		t.Parallel()
		four, log4, _, _ := startLogging(t, conn, "four", nil, []string{"--container", "sizes", "--shards", "4"})
		awaitLeader(t, four)
		eight, log8, _, _ := startLogging(t, conn, "eight", nil, []string{"--container", "sizes", "--shards", "8"})
		awaitConflict(t, eight, log8, "mode", "four", "shards=4", "shards=8")
		awaitConflict(t, four, log4, "shards", "eight", "shards=4", "shards=8")
	})
}

// A process restarted under its identity meets the lease its predecessor
// left behind (up to L, naming the same identity): that is no conflict. The
// restart must lead again without a setup_conflict line, a failing /healthz
// or blobleader_setup_conflict 1 — in a --shards pool too, whose member and
// shard leases are left behind the same way.
func TestWorker_RestartUnderTheSameIdentityIsNoConflict(t *testing.T) {
	t.Parallel()
	az := azuritetest.StartT(t)
	extra := []string{"--container", "again", "--shards", "2"}
	first, _, _, cmd := startLogging(t, az.ConnectionString(), "again", nil, extra)
	awaitLeader(t, first)
	waitOwned(t, first, 2)
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	base, logPath, restarted, _ := startLogging(t, az.ConnectionString(), "again", nil, extra)
	waitOwned(t, base, 2) // within L + a few polls: the old leases expired
	if took := time.Since(restarted); took < 5*time.Second {
		t.Fatalf("the restart led %s after it started: the old leases were not in force, so nothing was tested", took)
	}
	// Past ConflictAfter from the restart: long enough for a false report.
	time.Sleep(time.Until(restarted.Add(15*time.Second + 2200*time.Millisecond + 4*time.Second + 2*time.Second)))
	if l := logLines(t, logPath, "setup_conflict"); len(l) > 0 {
		t.Fatalf("setup_conflict after a restart under the same identity: %v", l)
	}
	if code, body := probeURL(t, base+"/healthz"); code != http.StatusOK {
		t.Fatalf("/healthz after the restart = %d %q", code, body)
	}
	if _, metrics := probeURL(t, base+"/metrics"); !strings.Contains(metrics, "\nblobleader_setup_conflict 0\n") {
		t.Fatalf("/metrics lacks blobleader_setup_conflict 0 after the restart:\n%s", metrics)
	}
}

// waitOwned waits until the worker at base leads and owns n shards.
func waitOwned(t *testing.T, base string, n int) {
	t.Helper()
	waitFor(t, fmt.Sprintf("%s leading and owning %d shards", base, n), 40*time.Second, func() (bool, string) {
		st := getStatus(t, base)
		sh, _ := st["shards"].([]any)
		return st["role"] == "leader" && len(sh) == n, fmt.Sprint(st)
	})
}
