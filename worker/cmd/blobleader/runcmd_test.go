package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/blobleader/blobleader/worker/azuritetest"
	"github.com/blobleader/blobleader/worker/stalltest"
)

// Invalid use of run exits 2 naming the problem, before contending: the
// storage here is unreachable, so a supervisor that contended would hang
// until runWorkerCmd's 20 s deadline.
func TestRun_InvalidUseExitsTwoNamingTheProblem(t *testing.T) {
	t.Parallel()
	conn := "--connection-string=" + goodConn
	dir := t.TempDir()
	plain := filepath.Join(dir, "plain")
	if err := os.WriteFile(plain, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no --", []string{"run", conn, "true"}, "missing -- before the command"},
		{"nothing after --", []string{"run", conn, "--"}, "empty command after --"},
		{"empty command", []string{"run", conn, "--", ""}, "empty command after --"},
		{"not in PATH", []string{"run", conn, "--", "no-such-command-blobleader"}, `"no-such-command-blobleader" is not in $PATH`},
		{"missing file", []string{"run", conn, "--", filepath.Join(dir, "missing")}, "does not exist"},
		{"a directory", []string{"run", conn, "--", dir}, "is a directory"},
		{"not executable", []string{"run", conn, "--", plain}, "not executable"},
		{"kill grace beyond the margin", []string{"run", conn, "--kill-grace=2500ms", "--", "true"}, "--kill-grace"},
		{"negative kill grace", []string{"run", conn, "--kill-grace=-1s", "--", "true"}, "--kill-grace"},
		{"deadline leaves no room to kill", []string{"run", conn, "--renew-deadline=12500ms", "--", "true"}, "--renew-deadline 12.5s for run"},
		{"shared rules still apply", []string{"run", conn, "--lease-duration=5s", "--", "true"}, "--lease-duration"},
		{"worker-only flag", []string{"run", conn, "--tick=1s", "--", "true"}, "tick"},
		{"positional before --", []string{"run", conn, "stray", "--", "true"}, `unexpected argument "stray"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			code, out := runWorkerCmd(t, []string{"AZURE_STORAGE_CONNECTION_STRING="}, tt.args...)
			if code != 2 {
				t.Fatalf("exit code %d, want 2; output:\n%s", code, out)
			}
			if !strings.Contains(out, tt.want) {
				t.Fatalf("message does not say %q:\n%s", tt.want, out)
			}
		})
	}
	// The largest kill grace the margin allows passes its rule: the run then
	// fails on the next rule checked (no storage), not on --kill-grace.
	code, out := runWorkerCmd(t, []string{"AZURE_STORAGE_CONNECTION_STRING="}, "run", "--kill-grace=2s", "--", "true")
	if code != 2 || !strings.Contains(out, "no storage") {
		t.Fatalf("--kill-grace=2s (exactly L − D − 3s) should pass its rule; got exit %d:\n%s", code, out)
	}
}

func TestRun_HelpExitsZeroAndListsItsFlags(t *testing.T) {
	t.Parallel()
	code, out := runWorkerCmd(t, nil, "run", "--help")
	if code != 0 {
		t.Fatalf("run --help exit %d:\n%s", code, out)
	}
	for _, f := range []string{"once", "kill-grace", "shutdown-grace", "lease-duration", "identity", "history"} {
		if !strings.Contains(out, "--"+f+"\n") || !strings.Contains(out, envName(f)) {
			t.Errorf("run --help does not list --%s with %s", f, envName(f))
		}
	}
	if strings.Contains(out, "--tick\n") {
		t.Error("run --help lists --tick, which run has no use for")
	}
	if code, out := runWorkerCmd(t, nil, "--help"); code != 0 || !strings.Contains(out, "blobleader run [flags] -- COMMAND") {
		t.Errorf("the worker's --help does not mention run: exit %d\n%s", code, out)
	}
}

// supProc is one `blobleader run` process under test.
type supProc struct {
	cmd     *exec.Cmd
	base    string // its HTTP endpoints, once url has read them
	history string
	out     *bytes.Buffer // the command's stdout; read it only once done is closed
	stderr  *syncBuffer   // the supervisor's log (and, when logged, the command's stdout)
	done    chan struct{}
	err     error
}

// url is the supervisor's base URL, read from its start line (waiting for
// it the first time: startedURL).
func (s *supProc) url(t *testing.T) string {
	t.Helper()
	if s.base == "" {
		s.base = startedURL(t, "supervisor", s.stderr.String)
	}
	return s.base
}

func startSupervisor(t *testing.T, conn, container, id string, extra []string, command ...string) *supProc {
	t.Helper()
	s := &supProc{history: filepath.Join(t.TempDir(), id+".jsonl"), out: &bytes.Buffer{}, stderr: &syncBuffer{}, done: make(chan struct{})}
	args := []string{"run", "--identity", id, "--listen", anyPort, "--history", s.history,
		"--container", container, "--log-format", "json"}
	args = append(append(args, extra...), "--")
	s.cmd = exec.Command(binary, append(args, command...)...)
	s.cmd.Env = append(os.Environ(), "AZURE_STORAGE_CONNECTION_STRING="+conn)
	s.cmd.Stdout = s.out
	stderr := s.stderr
	s.cmd.Stderr = stderr
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { s.err = s.cmd.Wait(); close(s.done) }()
	t.Cleanup(func() {
		_ = s.cmd.Process.Kill()
		<-s.done
		if t.Failed() {
			t.Logf("%s stderr:\n%s", id, stderr.String())
		}
	})
	return s
}

func (s *supProc) wait(t *testing.T, timeout time.Duration) int {
	t.Helper()
	select {
	case <-s.done:
	case <-time.After(timeout):
		t.Fatalf("supervisor did not exit within %v", timeout)
	}
	if ee, ok := s.err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	if s.err != nil {
		t.Fatal(s.err)
	}
	return 0
}

// record is a history line with the child fields.
type record struct {
	T        time.Time `json:"t"`
	Event    string    `json:"event"`
	Term     int64     `json:"term"`
	Reason   string    `json:"reason"`
	PID      int       `json:"pid"`
	ExitCode *int      `json:"exit_code"`
	Signal   string    `json:"signal"`
	Cause    string    `json:"cause"`
}

func readRecords(t *testing.T, path string) []record {
	t.Helper()
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []record
	for sc := bufio.NewScanner(f); sc.Scan(); {
		var r record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("history line %q: %v", sc.Text(), err)
		}
		out = append(out, r)
	}
	return out
}

// awaitEvent polls a history until pred holds for one of its records.
func awaitEvent(t *testing.T, path string, timeout time.Duration, what string, pred func(record) bool) record {
	t.Helper()
	var found record
	waitFor(t, what+" in "+filepath.Base(path), timeout, func() (bool, string) {
		rs := readRecords(t, path)
		for _, r := range rs {
			if pred(r) {
				found = r
				return true, ""
			}
		}
		return false, fmt.Sprintf("history: %+v", rs)
	})
	return found
}

func events(rs []record) []string {
	var out []string
	for _, r := range rs {
		if r.Event != "renewed" && r.Event != "observed_leader" {
			out = append(out, r.Event)
		}
	}
	return out
}

func TestRun_OnceExitsWithTheCommandsStatus(t *testing.T) {
	t.Parallel()
	az := azuritetest.StartT(t)
	tests := []struct {
		name     string
		script   string
		wantCode int
		wantExit *int
		wantSig  string
	}{
		{"exit 0", `echo "term=$BLOBLEADER_TERM identity=$BLOBLEADER_IDENTITY"; exit 0`, 0, ptr(0), ""},
		{"exit 7", `echo "term=$BLOBLEADER_TERM identity=$BLOBLEADER_IDENTITY"; exit 7`, 7, ptr(7), ""},
		{"killed by SIGKILL", `echo "term=$BLOBLEADER_TERM identity=$BLOBLEADER_IDENTITY"; kill -KILL $$`, 128 + 9, nil, "SIGKILL"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id := fmt.Sprintf("once%d", i)
			s := startSupervisor(t, az.ConnectionString(), fmt.Sprintf("run-once-%d", i), id, []string{"--once"}, "sh", "-c", tt.script)
			if code := s.wait(t, 20*time.Second); code != tt.wantCode {
				t.Fatalf("exit code %d, want %d; output:\n%s", code, tt.wantCode, s.out)
			}
			rs := readRecords(t, s.history)
			got := strings.Join(events(rs), ",")
			if got != "started_leading,child_started,child_exited,stopped_leading,released" {
				t.Fatalf("history events %s, want started_leading,child_started,child_exited,stopped_leading,released", got)
			}
			// Terms start at a wall-clock floor, not 1: the command must see
			// the term the supervisor leads under, as its history records it.
			term := rs[0].Term
			if term <= 0 {
				t.Fatalf("started_leading %+v has no term", rs[0])
			}
			if want := fmt.Sprintf("term=%d identity=%s\n", term, id); !strings.Contains(s.out.String(), want) {
				t.Fatalf("the command's output (passed through) lacks %q:\n%s", want, s.out)
			}
			started, exited := rs[1], rs[2]
			if started.PID <= 0 || started.Term != term || exited.PID != started.PID || exited.Term != term || exited.Cause != "exited" {
				t.Fatalf("child events %+v, %+v: want pid, term %d, cause exited", started, exited, term)
			}
			if (exited.ExitCode == nil) != (tt.wantExit == nil) || (exited.ExitCode != nil && *exited.ExitCode != *tt.wantExit) || exited.Signal != tt.wantSig {
				t.Fatalf("child_exited %+v: want exit_code %v, signal %q", exited, tt.wantExit, tt.wantSig)
			}
		})
	}
}

func ptr(i int) *int { return &i }

// A command that exits on its own releases the lease at once: the other
// supervisor starts its command within one poll (1.1·P) of the release, plus
// ε for its acquire and term write (DESIGN §2, L1 after a release) — a
// design bound on a real clock, judged with the stall the CPU and storage
// probes measured in it (a miss within it is inconclusive: run again).
func TestRun_CommandExitHandsOverAtOnce(t *testing.T) {
	t.Parallel()
	az := azuritetest.StartT(t)
	cfg := stalltest.Default
	cfg.Server = az.BlobEndpoint()
	stalltest.RunWith(t, cfg, func(t *testing.T, sp *stalltest.Probe) {
		container := "run-handover-" + strings.TrimPrefix(path.Base(t.Name()), "attempt")
		// a's command exits when told, once b follows a (polling the
		// lease): the bound runs from the release, so b must be polling by
		// then — a fixed sleep let a busy machine start b after it.
		exit := filepath.Join(t.TempDir(), "exit")
		a := startSupervisor(t, az.ConnectionString(), container, "a", nil, "sh", "-c", "while [ ! -e '"+exit+"' ]; do sleep 0.05; done; exit 3")
		awaitEvent(t, a.history, 20*time.Second, "child_started", func(r record) bool { return r.Event == "child_started" })
		b := startSupervisor(t, az.ConnectionString(), container, "b", nil, "sleep", "60")
		waitFor(t, "b following a", 20*time.Second, func() (bool, string) {
			st := getStatus(t, b.url(t))
			return st["role"] == "follower" && st["leader"] == "a", fmt.Sprintf("role %v, leader %v", st["role"], st["leader"])
		})
		if err := os.WriteFile(exit, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		rel := awaitEvent(t, a.history, 20*time.Second, "released", func(r record) bool { return r.Event == "released" })
		exited := awaitEvent(t, a.history, time.Second, "child_exited", func(r record) bool { return r.Event == "child_exited" })
		if exited.ExitCode == nil || *exited.ExitCode != 3 || exited.Cause != "exited" || !exited.T.Before(rel.T) {
			t.Fatalf("child_exited %+v then released %+v: want exit code 3, cause exited, before the release", exited, rel)
		}
		next := awaitEvent(t, b.history, 10*time.Second, "child_started", func(r record) bool { return r.Event == "child_started" })
		if !sp.Bound(t, "b's command start after a's release (bound 1.1·P + ε = 2.1 s)", rel.T, 1100*time.Millisecond+time.Second, next.T) {
			return
		}
		t.Logf("a's command exited; b's command started %v after the release (%v after the exit)", next.T.Sub(rel.T).Round(time.Millisecond), next.T.Sub(exited.T).Round(time.Millisecond))
		// /metrics counts the exit by cause.
		resp, err := http.Get(a.url(t) + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		for _, want := range []string{`blobleader_child_exits_total{cause="exited"} 1`, `blobleader_child_exits_total{cause="leadership_ended"} 0`, "blobleader_child_running 0"} {
			if !strings.Contains(string(body), want+"\n") {
				t.Errorf("/metrics lacks %q", want)
			}
		}
	})
}

// A supervisor killed with SIGKILL takes its command with it.
func TestRun_CommandDiesWithItsSupervisor(t *testing.T) {
	t.Parallel()
	az := azuritetest.StartT(t)
	s := startSupervisor(t, az.ConnectionString(), "run-pdeath", "pd", nil, "sh", "-c", "trap '' TERM; while :; do sleep 0.05; done")
	started := awaitEvent(t, s.history, 20*time.Second, "child_started", func(r record) bool { return r.Event == "child_started" })
	if !alive(started.PID) {
		t.Fatalf("command %d is not running", started.PID)
	}
	if err := s.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	s.wait(t, 5*time.Second)
	deadline := time.Now().Add(5 * time.Second)
	for alive(started.PID) {
		if time.Now().After(deadline) {
			t.Fatalf("command %d still runs 5s after its supervisor was SIGKILLed", started.PID)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// alive reports whether pid runs (exists and is not a zombie).
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(b, ')')
	return i >= 0 && i+2 < len(b) && b[i+2] != 'Z' && b[i+2] != 'X'
}

// A command that cannot be executed (an executable file that is neither a
// binary nor a #! script: ENOEXEC) is a failure --once must report as a
// shell does: 126, with one line naming the command.
func TestRun_OnceWithACommandThatCannotBeExecutedExits126(t *testing.T) {
	t.Parallel()
	az := azuritetest.StartT(t)
	bad := filepath.Join(t.TempDir(), "no-shebang")
	if err := os.WriteFile(bad, []byte("echo hello\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	s := startSupervisor(t, az.ConnectionString(), "run-enoexec", "enoexec", []string{"--once"}, bad)
	if code := s.wait(t, 20*time.Second); code != 126 {
		t.Fatalf("exit code %d, want 126 (a command that could not be executed)", code)
	}
	if got := s.stderr.String(); !strings.Contains(got, "could not run the command") || !strings.Contains(got, bad) {
		t.Fatalf("stderr does not say the command could not be run, naming it:\n%s", got)
	}
}

// startLoggedSupervisor is startSupervisor with stdout and stderr readable
// while it runs.
func startLoggedSupervisor(t *testing.T, conn, container, id string, extra []string, command ...string) (s *supProc, stderr *syncBuffer) {
	t.Helper()
	stderr = &syncBuffer{}
	s = &supProc{history: filepath.Join(t.TempDir(), id+".jsonl"), stderr: stderr, done: make(chan struct{})}
	args := []string{"run", "--identity", id, "--listen", anyPort, "--history", s.history,
		"--container", container, "--log-format", "text"}
	args = append(append(args, extra...), "--")
	s.cmd = exec.Command(binary, append(args, command...)...)
	s.cmd.Env = append(os.Environ(), "AZURE_STORAGE_CONNECTION_STRING="+conn)
	s.cmd.Stdout, s.cmd.Stderr = stderr, stderr
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { s.err = s.cmd.Wait(); close(s.done) }()
	t.Cleanup(func() {
		_ = s.cmd.Process.Kill()
		<-s.done
		if t.Failed() {
			t.Logf("%s output:\n%s", id, stderr.String())
		}
	})
	return s, stderr
}
