package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/blobleader/blobleader/worker/azuritetest"
)

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
