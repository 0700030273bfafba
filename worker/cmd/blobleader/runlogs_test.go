package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/blobleader/blobleader/worker/azuritetest"
)

// startLoggedSupervisor is startSupervisor with stdout and stderr readable
// while it runs.
func startLoggedSupervisor(t *testing.T, conn, container, id string, extra []string, command ...string) (s *supProc, stderr *syncBuffer) {
	t.Helper()
	port, err := azuritetest.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	s = &supProc{base: fmt.Sprintf("http://127.0.0.1:%d", port), history: filepath.Join(t.TempDir(), id+".jsonl"), done: make(chan struct{})}
	args := []string{"run", "--identity", id, "--listen", fmt.Sprintf("127.0.0.1:%d", port), "--history", s.history,
		"--container", container, "--log-format", "text"}
	args = append(append(args, extra...), "--")
	s.cmd = exec.Command(binary, append(args, command...)...)
	s.cmd.Env = append(os.Environ(), "AZURE_STORAGE_CONNECTION_STRING="+conn)
	stderr = &syncBuffer{}
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

func stoppedLeading(t *testing.T, path string) record {
	t.Helper()
	for _, r := range readRecords(t, path) {
		if r.Event == "stopped_leading" {
			return r
		}
	}
	t.Fatalf("no stopped_leading in %s: %+v", path, readRecords(t, path))
	return record{}
}

// The reason a supervisor's leadership ended says what happened: its
// command's own exit (--once) is "task exited…", a signal to the
// supervisor is "shutdown".
func TestRun_StoppedLeadingReasonSaysWhy(t *testing.T) {
	t.Parallel()
	az := azuritetest.StartT(t)
	t.Run("--once, the command exits", func(t *testing.T) {
		t.Parallel()
		s, _ := startLoggedSupervisor(t, az.ConnectionString(), "run-reason-once", "once", []string{"--once"}, "true")
		if code := s.wait(t, 20*time.Second); code != 0 {
			t.Fatalf("exit %d, want 0", code)
		}
		if r := stoppedLeading(t, s.history); !strings.HasPrefix(r.Reason, "task exited") {
			t.Fatalf("stopped_leading reason %q after the command exited on its own, want \"task exited…\"", r.Reason)
		}
	})
	t.Run("SIGINT", func(t *testing.T) {
		t.Parallel()
		s, _ := startLoggedSupervisor(t, az.ConnectionString(), "run-reason-int", "int", nil, "sleep", "60")
		awaitEvent(t, s.history, 20*time.Second, "child_started", func(r record) bool { return r.Event == "child_started" })
		if err := s.cmd.Process.Signal(syscall.SIGINT); err != nil {
			t.Fatal(err)
		}
		if code := s.wait(t, 20*time.Second); code != 0 {
			t.Fatalf("exit %d after SIGINT, want 0", code)
		}
		if r := stoppedLeading(t, s.history); r.Reason != "shutdown" {
			t.Fatalf("stopped_leading reason %q after SIGINT, want \"shutdown\"", r.Reason)
		}
	})
}

// A stopping supervisor says it waits for its command (and how long); a
// second signal skips the rest of the grace: the command is killed at once,
// the lease still released.
func TestRun_SecondSignalKillsTheCommandNowAndStillReleases(t *testing.T) {
	t.Parallel()
	az := azuritetest.StartT(t)
	const grace = 60 * time.Second
	s, out := startLoggedSupervisor(t, az.ConnectionString(), "run-second-signal", "twice", []string{"--shutdown-grace", grace.String()},
		"sh", "-c", `trap '' INT TERM; echo ready; while :; do sleep 0.05; done`)
	started := awaitEvent(t, s.history, 20*time.Second, "child_started", func(r record) bool { return r.Event == "child_started" })
	// A line of its own: the supervisor's start line quotes the script, "echo ready" included.
	commandReady := regexp.MustCompile(`(?m)^ready$`)
	await(t, 10*time.Second, "the command says ready", func() bool { return commandReady.MatchString(out.String()) })
	if err := s.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	await(t, 10*time.Second, "a line saying the supervisor waits for the command, for how long", func() bool {
		return strings.Contains(out.String(), "waiting up to") && strings.Contains(out.String(), "kill it now")
	})
	sent := time.Now()
	if err := s.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if code := s.wait(t, 20*time.Second); code != 0 {
		t.Fatalf("exit %d, want 0", code)
	}
	if took := time.Since(sent); took > grace/2 {
		t.Fatalf("exited %v after the second signal: the grace (%v) was not cut short", took, grace)
	}
	rs := readRecords(t, s.history)
	var exited record
	for _, r := range rs {
		if r.Event == "child_exited" {
			exited = r
		}
	}
	if exited.PID != started.PID || exited.Signal != "SIGKILL" || exited.Cause != "shutdown" {
		t.Fatalf("child_exited %+v: want pid %d killed by SIGKILL, cause shutdown", exited, started.PID)
	}
	if got := events(rs); got[len(got)-1] != "released" {
		t.Fatalf("history ends %v, want … released", got)
	}
	if alive(started.PID) {
		t.Fatalf("command %d still runs", started.PID)
	}
}
