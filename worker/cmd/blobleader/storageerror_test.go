package main

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/blobleader/blobleader/worker/azuritetest"
)

// startLogging starts the binary with args (the mode's, the storage's and
// the extra flags) plus its own identity, listen address and JSON log on a
// file, and waits until it serves. It returns the base URL, the log path,
// when the process started, and the process.
func startLogging(t *testing.T, conn, id string, mode, extra []string) (base, logPath string, started time.Time, cmd *exec.Cmd) {
	t.Helper()
	logPath = filepath.Join(t.TempDir(), id+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { logFile.Close() })
	args := append(append([]string{}, mode...), "--identity", id, "--listen", anyPort,
		"--container", "c"+strings.ToLower(strings.NewReplacer(" ", "", ",", "").Replace(id)), "--log-format", "json")
	cmd = exec.Command(binary, append(args, extra...)...)
	cmd.Env = append(os.Environ(), "AZURE_STORAGE_CONNECTION_STRING="+conn)
	cmd.Stderr = logFile
	started = time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	base = startedURL(t, "worker "+id, fileLog(logPath))
	awaitServing(t, base)
	return base, logPath, started, cmd
}

// A storage that answers, but never as the election expects — an Azurite
// started without --skipApiVersionCheck (400 InvalidHeaderValue) — or that
// is not there at all (connection refused) is not silent, in every mode:
// the first unexpected answer is logged at once (event storage_error, with
// op, status, code and the service's message), the next ones once per L
// with a count; /readyz names it. A start without any expected answer is
// start-up, not a failure (what a restart cannot cure, such as a role
// still propagating): /healthz stays 200 past L, and the status lines say
// `starting: true` (and healthy), which the alerts skip.
func TestWorker_UnexpectedStorageAnswersAtStartAreLoggedAndReadinessNotHealth(t *testing.T) {
	t.Parallel()
	strict := azuritetest.StartWithT(t, azuritetest.Options{CheckAPIVersion: true})
	port := azuritetest.ReservePort(t) // nothing listens there
	nobody := azuritetest.ConnectionString(fmt.Sprintf("http://127.0.0.1:%d/%s", port, azuritetest.Account))
	const lease = 15 * time.Second // the default L
	for _, tt := range []struct {
		name          string
		conn          string
		mode, extra   []string
		status        float64
		code, message string
	}{
		{"worker API version", strict.ConnectionString(), nil, nil, 400, "InvalidHeaderValue", "API version"},
		{"worker refused", nobody, nil, nil, 0, "error", "connection refused"},
		{"run API version", strict.ConnectionString(), []string{"run"}, []string{"--", "sleep", "1000"}, 400, "InvalidHeaderValue", "API version"},
		{"shards API version", strict.ConnectionString(), nil, []string{"--shards", "2"}, 400, "InvalidHeaderValue", "API version"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			base, logPath, started, _ := startLogging(t, tt.conn, "w "+tt.name, tt.mode, tt.extra)
			isOurs := func(l map[string]any) bool {
				_, member := l["member"]
				return l["op"] == "acquire" && l["code"] == tt.code && !member
			}
			first := awaitLogLine(t, logPath, "storage_error", 10*time.Second, isOurs)
			requireFields(t, first, map[string]string{"identity": "string", "op": "string", "status": "number",
				"code": "string", "message": "string", "repeated": "number", "level": "string"})
			if first["status"] != tt.status || first["repeated"] != float64(0) || first["level"] != "WARN" ||
				!strings.Contains(first["message"].(string), tt.message) {
				t.Fatalf("first storage_error line %v, want status %v, repeated 0, level WARN, a message with %q",
					first, tt.status, tt.message)
			}
			if code, body := probeURL(t, base+"/readyz"); code != http.StatusServiceUnavailable || !strings.Contains(body, tt.code) {
				t.Fatalf("/readyz = %d %q, want 503 naming %s", code, body, tt.code)
			}
			// /healthz: 200 throughout, well past L (the old rule failed it at L).
			for until := started.Add(lease + 5*time.Second); time.Now().Before(until); time.Sleep(500 * time.Millisecond) {
				if code, body := probeURL(t, base+"/healthz"); code != http.StatusOK {
					t.Fatalf("%s after the start /healthz = %d %q; a start without an expected storage answer is readiness, not health",
						time.Since(started).Round(time.Millisecond), code, body)
				}
			}
			if code, body := probeURL(t, base+"/readyz"); code != http.StatusServiceUnavailable || !strings.Contains(body, "yet") {
				t.Fatalf("/readyz = %d %q past L, want 503 saying no expected answer came yet", code, body)
			}
			for _, l := range logLines(t, logPath, "status") {
				if l["starting"] != true || l["healthy"] != true {
					t.Fatalf("status line %v during start-up, want starting true and healthy true", l)
				}
			}
			// Rate-limited: after the first, one line per L with how many it stands for.
			again := awaitLogLine(t, logPath, "storage_error", lease+10*time.Second, func(l map[string]any) bool {
				r, _ := l["repeated"].(float64)
				return isOurs(l) && r > 0
			})
			lines := 0
			for _, l := range logLines(t, logPath, "storage_error") {
				if isOurs(l) && l["shard"] == nil {
					lines++
				}
			}
			if limit := 2 + int(time.Since(started)/lease); lines > limit {
				t.Fatalf("%d storage_error lines for acquire %s in %s, want at most %d (one per L); a later one: %v",
					lines, tt.code, time.Since(started), limit, again)
			}
		})
	}
}

// Expected answers are not errors: two workers on a healthy Azurite (one
// leads, the other gets 409 LeaseAlreadyPresent on every poll) log no
// storage_error line, and once storage has answered their status lines no
// longer say `starting`.
func TestWorker_ExpectedAnswersAreNotLoggedAsStorageErrors(t *testing.T) {
	t.Parallel()
	az := azuritetest.StartT(t)
	var logs []string
	var bases []string
	for _, id := range []string{"quiet1", "quiet2"} {
		base, logPath, _, _ := startLogging(t, az.ConnectionString(), id, nil, []string{"--container", "quiet"})
		bases, logs = append(bases, base), append(logs, logPath)
	}
	waitFor(t, "a follower naming the leader", 20*time.Second, func() (bool, string) {
		a, b := getStatus(t, bases[0]), getStatus(t, bases[1])
		return (a["role"] == "follower" && a["leader"] == "quiet2") || (b["role"] == "follower" && b["leader"] == "quiet1"), fmt.Sprintf("%v / %v", a, b)
	})
	time.Sleep(3 * time.Second) // three more polls of the follower, each answered 409
	for _, p := range logs {
		if l := logLines(t, p, "storage_error"); len(l) > 0 {
			t.Fatalf("storage_error lines on a healthy storage: %v", l)
		}
		st := logLines(t, p, "status")
		if len(st) == 0 || st[len(st)-1]["starting"] != false {
			t.Fatalf("status lines %v: the last, logged after storage answered, must say starting false", st)
		}
	}
}
