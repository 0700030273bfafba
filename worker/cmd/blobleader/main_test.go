package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/blobleader/blobleader/worker/azuritetest"
	"github.com/blobleader/blobleader/worker/election/bloblock"
	"github.com/blobleader/blobleader/worker/history"
)

// These tests run the real binary, as an operator or the chaos harness would.

var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "blobleader-test-")
	if err != nil {
		panic(err)
	}
	binary = filepath.Join(dir, "blobleader")
	if out, err := exec.Command("go", "build", "-o", binary, ".").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build worker: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	stopMachine()
	os.RemoveAll(dir)
	os.Exit(code)
}

const goodConn = "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==;BlobEndpoint=http://127.0.0.1:1/devstoreaccount1;"

func runWorkerCmd(t *testing.T, env []string, args ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, args...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("worker %v did not exit within 20s; output:\n%s", args, out)
	}
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), string(out)
	}
	if err != nil {
		t.Fatal(err)
	}
	return 0, string(out)
}

func TestWorker_InvalidConfigExitsTwoNamingTheFlag(t *testing.T) {
	t.Parallel()
	conn := "--connection-string=" + goodConn
	tests := []struct {
		name string
		env  []string
		args []string
		want string // must appear in the one-line message
	}{
		{"lease 5s", nil, []string{conn, "--lease-duration=5s"}, "--lease-duration"},
		{"lease 61s", nil, []string{conn, "--lease-duration=61s"}, "--lease-duration"},
		{"lease 15.9s is not whole seconds", nil, []string{conn, "--lease-duration=15.9s"}, "--lease-duration"},
		{"deadline equal to L-2s", nil, []string{conn, "--renew-deadline=13s"}, "--renew-deadline"},
		{"deadline above L", nil, []string{conn, "--lease-duration=20s", "--renew-deadline=19s"}, "--renew-deadline"},
		{"renew interval above D/3", nil, []string{conn, "--renew-interval=4s"}, "--renew-interval"},
		{"retry period zero", nil, []string{conn, "--retry-period=0s"}, "--retry-period"},
		{"retry period 1ns", nil, []string{conn, "--retry-period=1ns"}, "--retry-period 1ns: must be at least 500ms"},
		{"retry period 1ns from the env twin", []string{"BLOBLEADER_RETRY_PERIOD=1ns"}, []string{conn}, "BLOBLEADER_RETRY_PERIOD (--retry-period) 1ns: must be at least 500ms"},
		{"empty container", nil, []string{conn, "--container="}, "--container"},
		{"container with capitals", nil, []string{conn, "--container=Leases"}, "--container"},
		{"malformed connection string", nil, []string{"--connection-string=not-a-connection-string"}, "--connection-string"},
		{"bad account key", nil, []string{"--connection-string=AccountName=a;AccountKey=!!!"}, "--connection-string"},
		{"http account url", nil, []string{"--account-url=http://a.blob.core.windows.net"}, "--account-url"},
		{"no storage", nil, []string{}, "--account-url"},
		{"both storages", nil, []string{conn, "--account-url=https://a.blob.core.windows.net"}, "--account-url"},
		{"bad duration syntax", nil, []string{conn, "--tick=soon"}, "-tick"},
		{"tick too short", nil, []string{conn, "--tick=1ms"}, "--tick"},
		{"env twin checked too", []string{"BLOBLEADER_LEASE_DURATION=90s"}, []string{conn}, "--lease-duration"},
		{"env twin bad syntax", []string{"BLOBLEADER_RETRY_PERIOD=fast"}, []string{conn}, "BLOBLEADER_RETRY_PERIOD"},
		{"unknown flag", nil, []string{conn, "--leader-duration=15s"}, "leader-duration"},
		{"bad log format", nil, []string{conn, "--log-format=xml"}, "--log-format"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			env := append([]string{"AZURE_STORAGE_CONNECTION_STRING="}, tt.env...)
			code, out := runWorkerCmd(t, env, tt.args...)
			if code != 2 {
				t.Fatalf("exit code %d, want 2; output:\n%s", code, out)
			}
			if !strings.Contains(out, tt.want) {
				t.Fatalf("message does not name %s:\n%s", tt.want, out)
			}
		})
	}
}

func TestWorker_HelpExitsZeroAndListsEveryFlagWithItsEnvTwin(t *testing.T) {
	t.Parallel()
	code, out := runWorkerCmd(t, nil, "--help")
	if code != 0 {
		t.Fatalf("--help exit %d", code)
	}
	for _, f := range []string{"account-url", "connection-string", "container", "blob", "identity", "lease-duration",
		"renew-deadline", "renew-interval", "retry-period", "tick", "listen", "history", "log-format"} {
		if !strings.Contains(out, "--"+f+"\n") || !strings.Contains(out, envName(f)) {
			t.Errorf("--help does not list --%s with %s", f, envName(f))
		}
	}
	if strings.Contains(out, "unsafe") {
		t.Error("--help lists the hidden negative-control flag")
	}
	if code, out := runWorkerCmd(t, nil, "ledger", "--help"); code != 0 || !strings.Contains(out, "--verify") {
		t.Errorf("ledger --help: exit %d\n%s", code, out)
	}
}

// startWorker runs the binary against Azurite and returns its base URL once
// it serves /status. Its log goes to historyPath + ".log" (a temporary
// directory's blob.log for --history blob).
func startWorker(t *testing.T, conn, id, historyPath string, extra ...string) (string, *exec.Cmd) {
	t.Helper()
	cmd := exec.Command(binary, "--identity", id, "--listen", anyPort, "--history", historyPath,
		"--container", "status-test", "--log-format", "json")
	cmd.Args = append(cmd.Args, extra...)
	cmd.Env = append(os.Environ(), "AZURE_STORAGE_CONNECTION_STRING="+conn)
	logPath := historyPath + ".log" // the worker's JSON log lines
	if historyPath == "blob" {
		logPath = filepath.Join(t.TempDir(), "blob.log")
	}
	logs, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait(); logs.Close() })
	base := startedURL(t, "worker "+id, fileLog(logPath))
	waitFor(t, "worker "+id+" ready", 10*time.Second, func() (bool, string) {
		resp, err := http.Get(base + "/readyz")
		if err != nil {
			return false, err.Error()
		}
		resp.Body.Close()
		return resp.StatusCode == 200, "/readyz " + resp.Status
	})
	return base, cmd
}

// awaitRole polls /status (10 s plus the measured stall) until the worker
// reports role.
func awaitRole(t *testing.T, base, role string) {
	t.Helper()
	waitFor(t, base+" reporting role "+role, 10*time.Second, func() (bool, string) {
		got := getStatus(t, base)["role"]
		return got == role, fmt.Sprintf("role %v", got)
	})
}

func getStatus(t *testing.T, base string) map[string]any {
	t.Helper()
	resp, err := http.Get(base + "/status")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("/status Content-Type %q", ct)
	}
	var m map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestWorker_StatusMetricsAndHistoryMatchTheContract(t *testing.T) {
	t.Parallel()
	az := azuritetest.StartT(t)
	dir := t.TempDir()
	start := time.Now()
	leaderURL, leader := startWorker(t, az.ConnectionString(), "w1", filepath.Join(dir, "w1.jsonl"))
	awaitRole(t, leaderURL, "leader") // then start the follower
	followerURL, _ := startWorker(t, az.ConnectionString(), "w2", filepath.Join(dir, "w2.jsonl"))

	// The exact key set and types of the /status contract
	// (leader_confirmed_at only while a leader is known).
	for _, base := range []string{leaderURL, followerURL} {
		want := map[string]reflect.Kind{"identity": reflect.String, "role": reflect.String, "term": reflect.Float64,
			"leader": reflect.String, "leaseDuration": reflect.String, "since": reflect.String}
		st := getStatus(t, base)
		if st["leader"] != "" {
			want["leader_confirmed_at"] = reflect.String
		}
		if len(st) != len(want) {
			t.Fatalf("/status has keys %v, want exactly %v", st, want)
		}
		for k, kind := range want {
			if v, ok := st[k]; !ok || reflect.TypeOf(v).Kind() != kind {
				t.Fatalf("/status %q = %v, want a %s", k, v, kind)
			}
		}
		if _, err := time.Parse(time.RFC3339Nano, st["since"].(string)); err != nil {
			t.Fatalf("since %q is not RFC3339Nano", st["since"])
		}
		// The first term on a new lock blob starts at the term floor (the
		// wall-clock millisecond), not at 1: see docs/failover.md.
		if st["leaseDuration"] != "15s" || (base == leaderURL && st["term"].(float64) < float64(start.UnixMilli())) {
			t.Fatalf("/status = %v, want leaseDuration 15s and a term above the floor %d", st, start.UnixMilli())
		}
	}
	if st := getStatus(t, leaderURL); st["role"] != "leader" || st["leader"] != "w1" || st["identity"] != "w1" {
		t.Fatalf("leader /status = %v", st)
	}
	// The follower reads the holder from metadata on its first held poll.
	leaderTerm := getStatus(t, leaderURL)["term"]
	waitFor(t, fmt.Sprintf("follower /status with role follower, leader w1, term %v", leaderTerm), 5*time.Second, func() (bool, string) {
		st := getStatus(t, followerURL)
		return st["role"] == "follower" && st["leader"] == "w1" && st["term"] == leaderTerm, fmt.Sprint(st)
	})

	resp, err := http.Get(leaderURL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(resp.Body)
	metrics := map[string]bool{}
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "#") {
			metrics[line] = true
		}
	}
	resp.Body.Close()
	term := int64(getStatus(t, leaderURL)["term"].(float64))
	for _, m := range []string{"blobleader_is_leader 1", "blobleader_term " + strconv.FormatFloat(float64(term), 'g', -1, 64), "blobleader_transitions_total 1",
		`blobleader_storage_requests_total{code="201",op="acquire"} 1`,
		"blobleader_log_records_dropped_total 0", "blobleader_history_records_dropped_total 0"} {
		if !metrics[m] {
			t.Errorf("/metrics lacks %q", m)
		}
	}
	found := false
	for line := range metrics {
		found = found || strings.HasPrefix(line, `blobleader_storage_request_duration_seconds_count{op="acquire"}`)
	}
	if !found {
		t.Error("/metrics lacks blobleader_storage_request_duration_seconds for acquire")
	}

	// `worker status` prints the same document (for images without a shell).
	if code, out := runWorkerCmd(t, nil, "status", "--url", leaderURL); code != 0 || !strings.Contains(out, `"role":"leader"`) || !strings.Contains(out, `"identity":"w1"`) {
		t.Fatalf("worker status: exit %d\n%s", code, out)
	}

	// Graceful stop: exit 0, and the history has the contract's shape.
	if err := leader.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := leader.Wait(); err != nil {
		t.Fatalf("SIGTERM: worker exited with %v, want 0", err)
	}
	f, err := os.Open(filepath.Join(dir, "w1.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var events []string
	for sc := bufio.NewScanner(f); sc.Scan(); {
		var rec map[string]any
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatalf("history line %q: %v", sc.Text(), err)
		}
		for _, k := range []string{"t", "mono_ns", "identity", "event"} {
			if _, ok := rec[k]; !ok {
				t.Fatalf("history line lacks %q: %s", k, sc.Text())
			}
		}
		events = append(events, rec["event"].(string))
	}
	if len(events) < 3 || events[0] != "started_leading" || events[len(events)-2] != "stopped_leading" || events[len(events)-1] != "released" {
		t.Fatalf("history events %v, want started_leading … stopped_leading, released", events)
	}
}

func TestWorker_HistoryToBlobLandsInTheHistoryContainer(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	az := azuritetest.StartT(t)
	base, cmd := startWorker(t, az.ConnectionString(), "hb1", "blob")
	awaitRole(t, base, "leader")
	_ = cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("SIGTERM: exit %v, want 0", err)
	}
	hc, err := bloblock.NewContainerClient(bloblock.ClientConfig{ConnectionString: az.ConnectionString(), Container: history.Container, RequestTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	prefix := "hb1/"
	page, err := hc.NewListBlobsFlatPager(&container.ListBlobsFlatOptions{Prefix: &prefix}).NextPage(ctx)
	if err != nil || len(page.Segment.BlobItems) != 1 {
		t.Fatalf("history blobs under hb1/: %v, %v; want exactly one", page.Segment, err)
	}
	resp, err := hc.NewBlobClient(*page.Segment.BlobItems[0].Name).DownloadStream(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	for _, ev := range []string{`"event":"started_leading"`, `"event":"stopped_leading"`, `"event":"released"`} {
		if !strings.Contains(string(body), ev) {
			t.Fatalf("history blob lacks %s (the final flush on stop must write it):\n%s", ev, body)
		}
	}
}

// "UseDevelopmentStorage=true" is the emulator shortcut of Microsoft's samples
// and app.config files: it names the development account on 127.0.0.1:10000.
// The worker must accept it and lead through it (it exited 2 as "malformed").
func TestWorker_AcceptsUseDevelopmentStorage(t *testing.T) {
	const wellKnownPort = 10000
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// A developer's own Azurite on 10000 is exactly what the shortcut means;
	// otherwise start one there.
	if l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", wellKnownPort)); err == nil {
		l.Close()
		az, err := azuritetest.StartOnPort(ctx, wellKnownPort)
		if err != nil {
			t.Fatalf("start Azurite on the well-known port: %v", err)
		}
		t.Cleanup(az.Stop)
	}
	dir := t.TempDir()
	base, _ := startWorker(t, "UseDevelopmentStorage=true", "devstorage", filepath.Join(dir, "h.jsonl"),
		"--container", fmt.Sprintf("devstorage-%d", time.Now().UnixNano()))
	awaitRole(t, base, "leader")
}
