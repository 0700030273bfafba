package scenarios

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// stamperEnv makes the test binary a stamper (TestMain): it writes its
// clock, one line per write, to the file the variable names, for ever.
const stamperEnv = "SCENARIOS_STAMPER"

func stamp() {
	f, err := os.OpenFile(os.Getenv(stamperEnv), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		os.Exit(1)
	}
	for {
		_, _ = f.WriteString(strconv.FormatInt(time.Now().UnixNano(), 10) + "\n")
	}
}

// The freeze of a supervisor with its command ends the command's lifetime
// for the command checker (checker.FaultFreeze): nothing of the group may
// run after the instant freezeGroup reports. A command that stamps its
// clock without pause is frozen 20 times; no stamp may come after. Under
// load the harness read its clock, then waited for a CPU before its
// SIGSTOP, and the command stamped a ledger entry 76 ms "after" the freeze
// (an S2-commands violation of a run that had none).
func TestFreezeGroup_NothingRunsAfterTheInstantItReports(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 20; i++ {
		out := filepath.Join(t.TempDir(), "stamps")
		cmd := exec.Command(exe, "-test.run=^$")
		cmd.Env = append(os.Environ(), stamperEnv+"="+out)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) { // running: it has stamped
			if st, err := os.Stat(out); err == nil && st.Size() > 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("the stamper wrote nothing in 10 s")
			}
		}
		frozen, err := freezeGroup(cmd.Process.Pid, nil)
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond) // a stamp after the freeze would be written by now
		b, _ := os.ReadFile(out)
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
		lines := bytes.Split(bytes.TrimSpace(b), []byte("\n"))
		last, err := strconv.ParseInt(string(lines[len(lines)-1]), 10, 64)
		if err != nil {
			continue // a stamp cut by the stop
		}
		if after := time.Unix(0, last).Sub(frozen); after > 0 {
			t.Fatalf("freeze %d: the frozen group stamped its clock %v after the instant freezeGroup reported", i+1, after)
		}
	}
}
