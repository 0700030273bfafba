package main

import (
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/blobleader/blobleader/worker/azuritetest"
)

// The supervisor (and everything between it and the command) catches
// SIGPIPE so that a log reader gone cannot kill it; the command must still
// start with SIGPIPE (and every other signal) as the supervisor's own caller
// left it: an ignored signal would be inherited across exec and change what
// the command does (`yes | head` in it would loop on EPIPE instead of dying).
// What the caller itself ignores is not ours to change (GNU make, for one,
// starts its recipes with signals 32 and 33 ignored), so the command's masks
// are compared with this test process's own, which starts the supervisor.
func TestRun_TheCommandStartsWithNoSignalIgnoredOrBlocked(t *testing.T) {
	t.Parallel()
	self, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	az := azuritetest.StartT(t)
	s := startSupervisor(t, az.ConnectionString(), "run-signals", "sig", []string{"--once"}, "cat", "/proc/self/status")
	if code := s.wait(t, 20*time.Second); code != 0 {
		t.Fatalf("exit code %d, want 0; output:\n%s", code, s.out)
	}
	const sigpipe = uint64(1) << (13 - 1)
	for _, field := range []string{"SigIgn", "SigBlk"} {
		inherited := signalMask(t, field, string(self))
		mask := signalMask(t, field, s.out.String())
		if added := mask &^ inherited; added != 0 {
			t.Errorf("the command starts with %s %016x, its supervisor's caller %016x: %016x added (SIGPIPE is bit %d), want nothing added", field, mask, inherited, added, 13-1)
		}
		if mask&sigpipe != 0 {
			t.Errorf("the command starts with SIGPIPE in %s (%016x), want it at its default action", field, mask)
		}
	}
}

// signalMask reads a signal mask field (SigIgn, SigBlk) of a /proc/<pid>/status text.
func signalMask(t *testing.T, field, status string) uint64 {
	t.Helper()
	m := regexp.MustCompile(`(?m)^` + field + `:\s*([0-9a-f]+)$`).FindStringSubmatch(status)
	if m == nil {
		t.Fatalf("no %s line in:\n%s", field, status)
	}
	mask, err := strconv.ParseUint(m[1], 16, 64)
	if err != nil {
		t.Fatal(err)
	}
	return mask
}

// Job control: a ^Z (SIGTSTP), SIGTTIN or SIGTTOU reaches the supervisor
// only (its command is in a process group of its own). The supervisor must
// not stop while its command runs on: it ignores them and keeps leading,
// renewing and heartbeating.
func TestRun_JobControlSignalsDoNotStopTheSupervisor(t *testing.T) {
	t.Parallel()
	az := azuritetest.StartT(t)
	s := startSupervisor(t, az.ConnectionString(), "run-jobcontrol", "jobctl", nil, "sleep", "60")
	awaitEvent(t, s.history, 20*time.Second, "child_started", func(r record) bool { return r.Event == "child_started" })
	for _, sig := range []syscall.Signal{syscall.SIGTSTP, syscall.SIGTTIN, syscall.SIGTTOU} {
		if err := s.cmd.Process.Signal(sig); err != nil {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond) // let a default action (stop) take effect before reading the state
		if st := procState(s.cmd.Process.Pid); st == 'T' {
			_ = s.cmd.Process.Signal(syscall.SIGCONT)
			t.Fatalf("the supervisor stopped on %s (state %c) while its command runs on", sig, st)
		}
	}
	// Still renewing: a renewed event after the signals.
	after := time.Now()
	awaitEvent(t, s.history, 10*time.Second, "a renew after the job-control signals", func(r record) bool { return r.Event == "renewed" && r.T.After(after) })
}

func procState(pid int) byte {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 || i+2 >= len(b) {
		return 0
	}
	return b[i+2]
}

// SIGTERM to the supervisor is forwarded to the command's group; a command
// that ignores it is SIGKILLed after --shutdown-grace; then the lease is
// released and the supervisor exits 0.
func TestRun_SIGTERMForwardsToTheGroupThenKills(t *testing.T) {
	t.Parallel()
	az := azuritetest.StartT(t)
	tests := []struct {
		name    string
		script  string
		wantSig string
		wantOut string
	}{
		{"command handles SIGTERM", `trap 'echo got-TERM; exit 0' TERM; echo ready; while :; do sleep 0.05; done`, "", "got-TERM\n"},
		{"command ignores SIGTERM", `trap '' TERM; echo ready; while :; do sleep 0.05; done`, "SIGKILL", ""},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := startSupervisor(t, az.ConnectionString(), fmt.Sprintf("run-term-%d", i), fmt.Sprintf("term%d", i), []string{"--shutdown-grace=700ms"}, "sh", "-c", tt.script)
			started := awaitEvent(t, s.history, 20*time.Second, "child_started", func(r record) bool { return r.Event == "child_started" })
			waitFor(t, "the command saying ready", 10*time.Second, func() (bool, string) {
				out := s.out.String()
				return strings.Contains(out, "ready"), fmt.Sprintf("output %q", out)
			})
			sent := time.Now()
			if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			if code := s.wait(t, 10*time.Second); code != 0 {
				t.Fatalf("exit code %d after SIGTERM, want 0", code)
			}
			took := time.Since(sent)
			rs := readRecords(t, s.history)
			var exited record
			for _, r := range rs {
				if r.Event == "child_exited" {
					exited = r
				}
			}
			if exited.Cause != "shutdown" || exited.PID != started.PID || exited.Signal != tt.wantSig {
				t.Fatalf("child_exited %+v: want cause shutdown, pid %d, signal %q", exited, started.PID, tt.wantSig)
			}
			if got := events(rs); got[len(got)-1] != "released" {
				t.Fatalf("history ends %v, want … released", got)
			}
			if !strings.Contains(s.out.String(), tt.wantOut) {
				t.Fatalf("output lacks %q:\n%s", tt.wantOut, s.out)
			}
			if tt.wantSig == "SIGKILL" && took < 700*time.Millisecond {
				t.Fatalf("exited %v after SIGTERM, before the 700ms shutdown grace: the command was not given its grace", took)
			}
			if alive(started.PID) {
				t.Fatalf("command %d still runs after its supervisor exited", started.PID)
			}
		})
	}
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
	// grace/2 (30 s) tells a grace cut short from the whole 60 s on any
	// machine: it needs no stall (docs/chaos.md#a-busy-machine).
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
