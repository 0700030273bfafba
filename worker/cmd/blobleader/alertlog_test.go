package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/blobleader/blobleader/worker/azuritetest"
)

// The log lines the shipped alerts parse (docs/architecture.md, "Log lines
// the alerts read") are checked here on the real binary's stderr.

// startLoggingWorker starts the worker with its JSON log on a file and waits
// until it serves; it returns the base URL, the process and the log path.
func startLoggingWorker(t *testing.T, conn, container, id string, extra ...string) (string, *exec.Cmd, string) {
	t.Helper()
	logPath := filepath.Join(t.TempDir(), id+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { logFile.Close() })
	cmd := exec.Command(binary, "--identity", id, "--listen", anyPort,
		"--container", container, "--log-format", "json")
	cmd.Args = append(cmd.Args, extra...)
	cmd.Env = append(os.Environ(), "AZURE_STORAGE_CONNECTION_STRING="+conn)
	cmd.Stderr = logFile
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	base := startedURL(t, "worker "+id, fileLog(logPath))
	awaitServing(t, base)
	return base, cmd, logPath
}

// logLines returns the JSON log lines of path whose event field is event.
func logLines(t *testing.T, path, event string) []map[string]any {
	t.Helper()
	return fileLines(t, path, "log", event)
}

// fileLines reads the complete JSON lines of a file another process is
// writing (a log, a history) and returns those whose event field is event.
// A last line without its newline is still being written: a busy machine
// can let a reader in mid-write, so it is left for the next read rather
// than failed as "not JSON".
func fileLines(t *testing.T, path, what, event string) []map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
		b = b[:i+1]
	} else {
		b = nil
	}
	var out []map[string]any
	for _, raw := range bytes.Split(b, []byte("\n")) {
		if len(raw) == 0 {
			continue
		}
		var line map[string]any
		if err := json.Unmarshal(raw, &line); err != nil {
			t.Fatalf("%s line is not JSON: %q: %v", what, raw, err)
		}
		if line["event"] == event {
			out = append(out, line)
		}
	}
	return out
}

// awaitLogLine waits (bounded) for a line with event in path that pred
// accepts, and returns it.
func awaitLogLine(t *testing.T, path, event string, timeout time.Duration, pred func(map[string]any) bool) map[string]any {
	t.Helper()
	var found map[string]any
	waitFor(t, fmt.Sprintf("a %q log line as wanted in %s", event, path), timeout, func() (bool, string) {
		lines := logLines(t, path, event)
		for _, l := range lines {
			if pred(l) {
				found = l
				return true, ""
			}
		}
		return false, fmt.Sprintf("the %q lines: %v", event, lines)
	})
	return found
}

// requireFields fails unless line has each key with a value of the JSON type
// named (string, number, bool).
func requireFields(t *testing.T, line map[string]any, fields map[string]string) {
	t.Helper()
	for k, want := range fields {
		v, ok := line[k]
		got := "missing"
		switch v.(type) {
		case string:
			got = "string"
		case float64:
			got = "number"
		case bool:
			got = "bool"
		}
		if !ok || got != want {
			t.Fatalf("log line %v: field %q is %s, want a %s", line, k, got, want)
		}
	}
}

func TestWorker_LeadershipChangesAndStatusAreLoggedForAlerts(t *testing.T) {
	t.Parallel()
	az := azuritetest.StartT(t)
	w1URL, w1, w1Log := startLoggingWorker(t, az.ConnectionString(), "alertlog", "w1")
	awaitRole(t, w1URL, "leader")
	w2URL, _, w2Log := startLoggingWorker(t, az.ConnectionString(), "alertlog", "w2")
	term1 := getStatus(t, w1URL)["term"].(float64)

	// One line per leadership change, with identity, term and the bound.
	started := awaitLogLine(t, w1Log, "started_leading", 5*time.Second, func(l map[string]any) bool { return l["term"] == term1 })
	requireFields(t, started, map[string]string{"time": "string", "msg": "string", "identity": "string", "term": "number", "valid_until": "string"})
	if started["identity"] != "w1" {
		t.Fatalf("started_leading line %v names identity %v, want w1", started, started["identity"])
	}
	if _, err := time.Parse(time.RFC3339Nano, started["valid_until"].(string)); err != nil {
		t.Fatalf("started_leading valid_until %q is not RFC3339Nano: %v", started["valid_until"], err)
	}

	// Every worker says what it sees: the leader that it leads, the follower
	// who leads, both healthy.
	leaderStatus := awaitLogLine(t, w1Log, "status", 5*time.Second, func(l map[string]any) bool { return l["role"] == "leader" })
	requireFields(t, leaderStatus, map[string]string{"identity": "string", "role": "string", "term": "number", "leader": "string", "valid_until": "string", "healthy": "bool"})
	if leaderStatus["term"] != term1 || leaderStatus["leader"] != "w1" || leaderStatus["healthy"] != true || leaderStatus["valid_until"] == "" {
		t.Fatalf("leader's status line %v, want term %v, leader w1, healthy, a valid_until", leaderStatus, term1)
	}
	awaitLogLine(t, w2Log, "status", 5*time.Second, func(l map[string]any) bool {
		return l["role"] == "follower" && l["leader"] == "w1" && l["term"] == term1 && l["healthy"] == true
	})

	// A graceful stop: w1 logs the end of its term, w2 the start of the next.
	if err := w1.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := w1.Wait(); err != nil {
		t.Fatalf("SIGTERM: w1 exited with %v, want 0", err)
	}
	stopped := awaitLogLine(t, w1Log, "stopped_leading", time.Second, func(l map[string]any) bool { return l["term"] == term1 })
	requireFields(t, stopped, map[string]string{"identity": "string", "term": "number", "reason": "string", "valid_until": "string"})
	awaitRole(t, w2URL, "leader")
	term2 := getStatus(t, w2URL)["term"].(float64)
	next := awaitLogLine(t, w2Log, "started_leading", 5*time.Second, func(l map[string]any) bool { return l["term"] == term2 })
	if next["identity"] != "w2" || term2 <= term1 {
		t.Fatalf("w2's started_leading line %v: want identity w2 and a term above %v", next, term1)
	}
	// The follower's status turns at once (not after a lease duration).
	awaitLogLine(t, w2Log, "status", 3*time.Second, func(l map[string]any) bool { return l["role"] == "leader" && l["term"] == term2 })
	if code, body := probeURL(t, w2URL+"/metrics"); code != http.StatusOK || !strings.Contains(body, "\nblobleader_healthy 1\n") {
		t.Fatalf("/metrics (%d) lacks blobleader_healthy 1:\n%s", code, body)
	}
}

// A storage refusal (403) is logged per request, and a worker whose term
// write is refused says so in its status line and in blobleader_healthy.
// The 403s come from a proxy in front of Azurite that refuses every
// metadata write, as storage does without the role assignment.
func TestWorker_ForbiddenStorageAndFailingHealthAreLoggedForAlerts(t *testing.T) {
	t.Parallel()
	az := azuritetest.StartT(t)
	proxy, refused := metadataRefusingProxy(t, az.ConnectionString(), "AuthorizationPermissionMismatch")

	base, _, logPath := startLoggingWorker(t, az.ConnectionString(), "forbidden", "refused",
		"--storage-dial", strings.TrimPrefix(proxy.URL, "http://"))
	line := awaitLogLine(t, logPath, "storage_forbidden", 10*time.Second, func(map[string]any) bool { return true })
	requireFields(t, line, map[string]string{"identity": "string", "op": "string", "code": "number", "level": "string"})
	if line["code"] != float64(403) || line["identity"] != "refused" {
		t.Fatalf("storage_forbidden line %v, want code 403 and identity refused", line)
	}
	unhealthy := awaitLogLine(t, logPath, "status", 10*time.Second, func(l map[string]any) bool { return l["healthy"] == false })
	if h, _ := unhealthy["health"].(string); !strings.Contains(h, "term write") || unhealthy["level"] != "WARN" {
		t.Fatalf("unhealthy status line %v, want level WARN and a health reason naming the term write", unhealthy)
	}
	if code, body := probeURL(t, base+"/metrics"); code != http.StatusOK || !strings.Contains(body, "\nblobleader_healthy 0\n") {
		t.Fatalf("/metrics (%d) lacks blobleader_healthy 0 while /healthz fails:\n%s", code, body)
	}
	if refused.Load() == 0 {
		t.Fatal("the proxy refused no metadata write: the fault never hit")
	}
}

// In --shards mode /metrics says which shards the worker holds (the
// dashboard's shard-ownership panels): alone in its pool, it holds them all.
func TestWorker_ShardOwnershipIsExported(t *testing.T) {
	t.Parallel()
	az := azuritetest.StartT(t)
	base, _, _ := startLoggingWorker(t, az.ConnectionString(), "shardmetrics", "s1", "--shards", "2")
	waitFor(t, "/metrics showing both shards owned", 30*time.Second, func() (bool, string) {
		_, body := probeURL(t, base+"/metrics")
		return strings.Contains(body, "\nblobleader_shards_owned 2\n") && strings.Contains(body, "\nblobleader_shard_owned{shard=\"0\"} 1\n") &&
			strings.Contains(body, "\nblobleader_shard_owned{shard=\"1\"} 1\n"), "/metrics:\n" + body
	})
}

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
