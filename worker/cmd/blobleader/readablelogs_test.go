package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/blobleader/blobleader/worker/azuritetest"
)

// jsonLines parses a JSON log.
func jsonLines(t *testing.T, log string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for sc := bufio.NewScanner(strings.NewReader(log)); sc.Scan(); {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			continue // not a log line (a panic would show in the test's failure)
		}
		out = append(out, m)
	}
	return out
}

// aboutTerm is the log lines, other than the periodic status line and the
// ledger's own, that carry term.
func aboutTerm(lines []map[string]any, term float64) []string {
	var out []string
	for _, l := range lines {
		if l["term"] == term && l["msg"] != "status" && !strings.HasPrefix(fmt.Sprint(l["msg"]), "ledger") {
			out = append(out, fmt.Sprintf("%v %v", l["msg"], l))
		}
	}
	return out
}

func stopProc(t *testing.T, p *secretProc) {
	t.Helper()
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- p.cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatalf("%s did not stop within 20s of SIGTERM", p.name)
	}
}

// Each leadership change is one line in a worker's log: the leader's start
// and end (the alert lines), a follower's sight of a new leader; a normal
// start says nothing that reads like the runbook's "ledger fenced".
func TestWorker_EachLeadershipChangeIsLoggedOnce(t *testing.T) {
	t.Parallel()
	az := azuritetest.StartT(t)
	w1 := startCaptured(t, "w1", az.ConnectionString(), "--log-format", "json", "--container", "once-logs")
	awaitRole(t, w1.base, "leader")
	t1 := getStatus(t, w1.base)["term"].(float64)
	w2 := startCaptured(t, "w2", az.ConnectionString(), "--log-format", "json", "--container", "once-logs")
	await(t, 10*time.Second, "w2 sees w1 lead", func() bool { return getStatus(t, w2.base)["leader"] == "w1" })
	stopProc(t, w1)
	awaitRole(t, w2.base, "leader")
	t2 := getStatus(t, w2.base)["term"].(float64)
	stopProc(t, w2)

	l1, l2 := jsonLines(t, w1.stderr.String()), jsonLines(t, w2.stderr.String())
	if got := aboutTerm(l1, t1); len(got) != 2 {
		t.Errorf("w1 logged its leadership of term %.0f in %d lines, want 2 (started, stopped):\n%s", t1, len(got), strings.Join(got, "\n"))
	}
	if got := aboutTerm(l2, t1); len(got) != 1 {
		t.Errorf("w2 logged w1's leadership of term %.0f in %d lines, want 1:\n%s", t1, len(got), strings.Join(got, "\n"))
	}
	if got := aboutTerm(l2, t2); len(got) != 2 {
		t.Errorf("w2 logged its leadership of term %.0f in %d lines, want 2 (started, stopped):\n%s", t2, len(got), strings.Join(got, "\n"))
	}
	for _, l := range append(l1, l2...) {
		if strings.Contains(fmt.Sprint(l["msg"]), "fenced") {
			t.Errorf("a normal start and takeover logged %q", l["msg"])
		}
	}
}

// Values in a text log read as text, not as Go's formatting of maps and
// slices: the shard leader's "assignment published" line.
func TestWorker_ShardAssignmentLineReadsAsText(t *testing.T) {
	t.Parallel()
	az := azuritetest.StartT(t)
	w := startCaptured(t, "w1", az.ConnectionString(), "--log-format", "text", "--shards", "2")
	var line string
	await(t, 20*time.Second, "an assignment published line", func() bool {
		for _, l := range strings.Split(w.stderr.String(), "\n") {
			if strings.Contains(l, "assignment published") {
				line = l
				return true
			}
		}
		return false
	})
	if strings.Contains(line, "map[") || strings.Contains(line, "=[") {
		t.Fatalf("the line carries Go formatting: %s", line)
	}
	if !strings.Contains(line, "w1=2") {
		t.Fatalf("the line does not say w1 holds 2 shards as w1=2: %s", line)
	}
}

// /status says when the leader it names was last confirmed: a leader its
// last renew, a follower the last read of the lock's record that named it,
// which moves on as the follower reads again.
func TestWorker_StatusSaysWhenTheLeaderWasLastConfirmed(t *testing.T) {
	t.Parallel()
	az := azuritetest.StartT(t)
	w1 := startCaptured(t, "w1", az.ConnectionString(), "--container", "confirmed", "--retry-period", "500ms")
	awaitRole(t, w1.base, "leader")
	w2 := startCaptured(t, "w2", az.ConnectionString(), "--container", "confirmed", "--retry-period", "500ms")
	await(t, 10*time.Second, "w2 sees w1 lead", func() bool { return getStatus(t, w2.base)["leader"] == "w1" })
	confirmed := func(base string) time.Time {
		t.Helper()
		st := getStatus(t, base)
		s, ok := st["leader_confirmed_at"].(string)
		if !ok {
			t.Fatalf("%s /status has no leader_confirmed_at: %v", base, st)
		}
		at, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			t.Fatalf("leader_confirmed_at %q: %v", s, err)
		}
		if at.After(time.Now()) {
			t.Fatalf("leader_confirmed_at %s is in the future", at)
		}
		return at
	}
	// The leader renews every 2 s: its confirmation is never older than
	// the renew deadline (10 s) while it leads.
	if at := confirmed(w1.base); time.Since(at) > 10*time.Second {
		t.Fatalf("the leader's leader_confirmed_at is %v old", time.Since(at))
	}
	first := confirmed(w2.base)
	await(t, 15*time.Second, "the follower's confirmation moves on", func() bool { return confirmed(w2.base).After(first) })
	// No leader known: no confirmation.
	stopProc(t, w1)
	stopProc(t, w2)
}
