package chaos

import (
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"
)

// ProcAlive: a running process is alive; one that exited and is not yet
// reaped (a zombie) is not, and neither is one that is gone.
func TestProcAlive_RunningZombieAndGone(t *testing.T) {
	if !ProcAlive(os.Getpid()) {
		t.Fatal("this test's own process reads as not alive")
	}
	cmd := exec.Command("true")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	// Go does not reap it before Wait, so it turns into a zombie: poll its
	// state (no event announces it) within a deadline.
	waitFor(t, fmt.Sprintf("pid %d (`true`) reading as not alive", pid), 5*time.Second, func() (bool, string) {
		st, err := procState(pid)
		return !ProcAlive(pid), fmt.Sprintf("state %q err %v", st, err)
	})
	if st, err := procState(pid); err != nil || st != 'Z' {
		t.Fatalf("pid %d: state %q err %v, want a zombie (Z) before Wait", pid, st, err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	if ProcAlive(pid) {
		t.Fatalf("reaped pid %d reads as alive", pid)
	}
}
