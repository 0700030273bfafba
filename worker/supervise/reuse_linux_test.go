package supervise

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// inPIDNamespaceEnv marks this test binary as re-run in a pid namespace of
// its own by inPIDNamespace.
const inPIDNamespaceEnv = "SUPERVISE_IN_PIDNS"

// inPIDNamespace runs the calling test again, alone, as pid 1 of a new pid
// namespace with its own /proc (`unshare --pid --fork --mount-proc`), and
// reports whether the caller is that run (then it does the work). A test
// that hands pid numbers out on purpose (ns_last_pid) does it there, never
// on the machine's. Needs root and util-linux unshare; skips with one line
// otherwise.
func inPIDNamespace(t *testing.T) bool {
	t.Helper()
	if os.Getenv(inPIDNamespaceEnv) != "" {
		return true
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root: the test hands out pid numbers (ns_last_pid) in a pid namespace of its own")
	}
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		t.Skipf("needs util-linux unshare for a pid namespace of its own: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, unshare, "--pid", "--fork", "--mount-proc", "--kill-child",
		os.Args[0], "-test.run=^"+t.Name()+"$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), inPIDNamespaceEnv+"=1")
	out, err := cmd.CombinedOutput()
	t.Logf("in a pid namespace of its own:\n%s", out)
	if err != nil {
		t.Fatalf("the run in a pid namespace failed: %v", err)
	}
	return false
}

// takeNumber starts a process that leads a process group of its own (as
// Azurite, a shell's job or a service does) under pid number n, which must
// be free: it sets the namespace's last handed-out pid to n-1 and forks,
// again until the fork gets n (a thread of this process may take it
// first). The process is SIGKILLed and reaped when t ends.
func takeNumber(t *testing.T, n int) *exec.Cmd {
	t.Helper()
	for range 200 {
		if err := os.WriteFile("/proc/sys/kernel/ns_last_pid", []byte(strconv.Itoa(n-1)), 0); err != nil {
			t.Fatalf("set ns_last_pid: %v", err)
		}
		cmd := exec.Command("sleep", "300")
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		if cmd.Process.Pid == n {
			t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
			return cmd
		}
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}
	t.Fatalf("could not get pid %d for a process of another group in 200 forks", n)
	return nil
}

// A command's process group is its own only while it has a member: once
// the command (its leader) is reaped and the rest of its lineage has left
// the group, the kernel may give the number to another process — on a
// machine with pid_max 32768 and a fork-walker burning numbers, within
// seconds — which may lead a group of its own (Azurite, started with
// setpgid, does). Every kill of the lineage (the supervisor's Stop, the
// shim's and the guard's at a missed deadline) must spare that group while
// it still kills the lineage. The supervisor is a process of its own here,
// so that the other group is no process of its (as Azurite was not).
func TestKill_SparesTheGroupThatTookAnEndedGroupsNumber(t *testing.T) {
	if !inPIDNamespace(t) {
		return
	}
	for _, mode := range []string{"stop", "deadline"} {
		t.Run(mode, func(t *testing.T) {
			dir := t.TempDir()
			pidfile, ready := filepath.Join(dir, "pids"), filepath.Join(dir, "ready")
			spec := helperSpec("leaver-supervisor", "HELPER_PIDFILE="+pidfile, "HELPER_READY="+ready, "HELPER_MODE="+mode)
			sup := exec.Command(spec.Path, spec.Args[1:]...)
			sup.Env, sup.Stdout, sup.Stderr = spec.Env, os.Stderr, os.Stderr
			if err := sup.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan struct{})
			go func() { _ = sup.Wait(); close(exited) }()
			t.Cleanup(func() { _ = sup.Process.Kill(); <-exited })
			pids := pidsIn(t, pidfile, 2) // the command and its job, in either order
			var command int
			waitFor(t, "the command's exit, reaped", 10*time.Second, func() (bool, string) {
				b, _ := os.ReadFile(ready)
				command, _ = strconv.Atoi(string(b))
				return command > 0, fmt.Sprintf("ready file %q", b)
			})
			job := pids[0]
			if job == command {
				job = pids[1]
			}
			if !alive(job) {
				t.Fatalf("the job %d that left the group is gone before the kill: the test shows nothing", job)
			}
			other := takeNumber(t, command)
			t.Logf("command %d exited, its job %d lives on; pid %d now leads another group", command, job, other.Process.Pid)
			if mode == "stop" {
				if err := sup.Process.Signal(syscall.SIGUSR1); err != nil {
					t.Fatal(err)
				}
			}
			await(t, exited, 30*time.Second, "the supervisor's end once its group is done")
			if !sup.ProcessState.Success() {
				t.Fatalf("the supervisor ended %v", sup.ProcessState)
			}
			if exists(job) {
				t.Errorf("the job %d outlived the kill of its lineage", job)
			}
			if !alive(other.Process.Pid) {
				t.Fatalf("the kill of the ended group %d took pid %d, the leader of another group that got its number (%s)", command, other.Process.Pid, stateOf(other.Process.Pid))
			}
		})
	}
}

// stateOf is pid's /proc state for a failure message.
func stateOf(pid int) string {
	p, ok := readProc(pid)
	if !ok {
		return "gone"
	}
	return fmt.Sprintf("state %c", p.state)
}
