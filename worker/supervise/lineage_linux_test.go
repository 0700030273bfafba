package supervise

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/blobleader/blobleader/worker/stalltest"
)

// A supervisor that is a subreaper (as every supervisor is) or pid 1 adopts
// orphans that its command never started (`docker exec c sh -c 'job &'`
// into a container whose pid 1 it is; a helper of its own that forked and
// exited). Such an orphan is not a member of the group: stopping the group
// neither kills it nor waits for it.
func TestStop_AnOrphanNotBornFromTheCommandIsNoMember(t *testing.T) {
	stalltest.Run(t, func(t *testing.T, sp *stalltest.Probe) {
		if err := EnableSubreaper(); err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		// 1. The foreign orphan: a forker started by us, not by any group, whose
		// grandchild (ignoring polite signals) it leaves to us.
		foreign := filepath.Join(dir, "foreign")
		f := helperSpec("forker", "HELPER_PIDFILE="+foreign)
		p, err := os.StartProcess(f.Path, f.Args, &os.ProcAttr{Env: f.Env, Files: []*os.File{nil, os.Stdout, os.Stderr}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.Wait(); err != nil {
			t.Fatal(err)
		}
		orphan := otherThan(pidsIn(t, foreign, 2), p.Pid)
		t.Cleanup(func() {
			_ = syscall.Kill(orphan, syscall.SIGKILL)
			var ws syscall.WaitStatus
			_, _ = syscall.Wait4(orphan, &ws, 0, nil)
		})
		if ppid := parentOf(t, orphan); ppid != os.Getpid() {
			t.Fatalf("the orphan's parent is %d, want us (%d): the test shows nothing", ppid, os.Getpid())
		}
		// 2. A group whose command ignores SIGTERM, stopped.
		pidfile := filepath.Join(dir, "pids")
		g := startT(t, helperSpec("ignore-term", "HELPER_PIDFILE="+pidfile))
		cmd := pidsIn(t, pidfile, 1)[0]
		began := time.Now()
		stopT(t, sp, g, syscall.SIGTERM, 100*time.Millisecond)
		if exists(cmd) {
			t.Fatalf("the command %d still exists after Stop", cmd)
		}
		if !alive(orphan) {
			t.Fatalf("Stop killed %d, an orphan the command never started (it was adopted by the supervisor)", orphan)
		}
		sp.Bound(t, "Stop, which must not wait for a process that is not a member (bound grace 100 ms + stopBound)", began, 100*time.Millisecond+stopBound, time.Now())
	})
}

// The guard is SIGKILLed and its supervisor frozen at once, before it can
// start another: the deadline is still held (by the shim), and the command
// dies by it while the supervisor is frozen.
func TestShim_HoldsTheDeadlineWhenTheGuardDiesJustBeforeAFreeze(t *testing.T) {
	stalltest.Run(t, func(t *testing.T, sp *stalltest.Probe) {
		dir := t.TempDir()
		pidfile := filepath.Join(dir, "pids")
		const deadline = 500 * time.Millisecond
		spec, armed := deadlineSupervisor(dir, pidfile, deadline, 0)
		sup := startT(t, spec)
		cmd := pidsIn(t, pidfile, 1)[0]
		awaitArmed(t, armed)
		var guard int
		waitFor(t, "the supervisor's guard", 10*time.Second, func() (bool, string) {
			for _, p := range readProcesses() {
				if b, _ := os.ReadFile("/proc/" + strconv.Itoa(p.pid) + "/cmdline"); p.ppid == sup.Pid() && strings.HasPrefix(string(b), GuardName+"\x00") {
					guard = p.pid
				}
			}
			return guard != 0, fmt.Sprintf("no child of the supervisor %d named %s", sup.Pid(), GuardName)
		})
		if err := syscall.Kill(guard, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		if err := syscall.Kill(sup.Pid(), syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		frozen := time.Now()
		defer syscall.Kill(sup.Pid(), syscall.SIGCONT)
		// Nobody holding the deadline leaves the command running until the
		// supervisor's 20 s extension; held, it dies by the deadline + 1 s
		// (judged with the stall measured meanwhile: a starved shim kills
		// late, no defect).
		for alive(cmd) {
			if time.Since(frozen) > 10*time.Second {
				t.Fatalf("command %d still runs %v after its guard was killed and its supervisor frozen (deadline %v): nobody holds the deadline", cmd, time.Since(frozen), deadline)
			}
			time.Sleep(5 * time.Millisecond)
		}
		died := time.Now()
		if sp.Bound(t, "the command's death after the freeze (bound the deadline 500 ms + 1 s)", frozen, deadline+time.Second, died) {
			t.Logf("the command died %v after the freeze (deadline %v)", died.Sub(frozen).Round(time.Millisecond), deadline)
		}
	})
}
