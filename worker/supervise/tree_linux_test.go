package supervise

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/blobleader/blobleader/worker/stalltest"
)

// Like a cron daemon, the command starts long jobs in a new session and in
// a new process group, all ignoring polite signals. Stop must take them
// too, and "dead" still means reaped: with a cgroup (cgroup.kill) and with
// the process tree alone.
func TestStop_KillsJobsThatLeftTheProcessGroup(t *testing.T) {
	for _, tc := range []struct {
		name     string
		noCgroup bool
	}{{"cgroup", false}, {"process tree", true}} {
		t.Run(tc.name, func(t *testing.T) {
			stalltest.Run(t, func(t *testing.T, sp *stalltest.Probe) {
				if !tc.noCgroup && !CanKillAnyUser() {
					t.Skip("no writable cgroup v2 with cgroup.kill here: the process-tree case covers this host")
				}
				pidfile := filepath.Join(t.TempDir(), "pids")
				spec := helperSpec("escaper", "HELPER_PIDFILE="+pidfile)
				spec.NoCgroup = tc.noCgroup
				g := startT(t, spec)
				if (g.Cgroup() != "") == tc.noCgroup {
					t.Fatalf("Cgroup() = %q with NoCgroup=%v", g.Cgroup(), tc.noCgroup)
				}
				pids := pidsIn(t, pidfile, 3)
				escaped := 0
				for _, p := range pids {
					if pr, ok := readProc(p); ok && pr.pgid != g.Pid() {
						escaped++
					}
				}
				if escaped != 2 {
					t.Fatalf("expected two jobs outside the command's process group %d, found %d (pids %v): the test shows nothing", g.Pid(), escaped, pids)
				}
				stopT(t, sp, g, syscall.SIGTERM, 100*time.Millisecond)
				for _, p := range pids {
					if exists(p) {
						t.Errorf("pid %d (one of %v) still exists after Stop returned: alive=%v", p, pids, alive(p))
						_ = syscall.Kill(p, syscall.SIGKILL)
					}
				}
			})
		})
	}
}

// The guard holds the leadership's deadline: extended, it waits; once the
// supervisor stops extending it (frozen here with SIGSTOP), it kills the
// command itself within the deadline, while the supervisor is still frozen.
// "slow start" is the fault of a busy machine: a start that takes longer
// than the deadline must not spend it before the first extension.
func TestGuard_KillsTheGroupWhenTheSupervisorMissesItsDeadline(t *testing.T) {
	const deadline = 500 * time.Millisecond
	for _, tc := range []struct {
		name      string
		slowStart time.Duration
	}{{"prompt start", 0}, {"slow start", 2 * deadline}} {
		t.Run(tc.name, func(t *testing.T) {
			stalltest.Run(t, func(t *testing.T, sp *stalltest.Probe) {
				guardKillsWhenSupervisorFreezes(t, sp, deadline, tc.slowStart)
			})
		})
	}
}

func guardKillsWhenSupervisorFreezes(t *testing.T, sp *stalltest.Probe, deadline, slowStart time.Duration) {
	dir := t.TempDir()
	pidfile := filepath.Join(dir, "pids")
	out, err := os.Create(filepath.Join(dir, "out"))
	if err != nil {
		t.Fatal(err)
	}
	spec, armed := deadlineSupervisor(dir, pidfile, deadline, slowStart)
	spec.Stdout = out
	sup := startT(t, spec)
	cmd := pidsIn(t, pidfile, 1)[0]
	began := awaitArmed(t, armed)
	for time.Since(began) < 3*deadline {
		time.Sleep(50 * time.Millisecond)
	}
	if !alive(cmd) {
		// Extended every 100 ms from the moment it was armed, the deadline
		// lapses only if the supervisor was starved of the rest of it.
		sp.Starved(t, fmt.Sprintf("command %d died %v after its deadline was armed although it was being extended (deadline %v)", cmd, time.Since(began), deadline),
			began, time.Now(), deadline-100*time.Millisecond)
		return
	}
	if err := syscall.Kill(sup.Pid(), syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	frozen := time.Now()
	defer syscall.Kill(sup.Pid(), syscall.SIGCONT)
	for alive(cmd) {
		if now := time.Now(); now.After(frozen.Add(deadline + time.Second + sp.StallIn(frozen, now))) {
			t.Fatalf("command %d still runs %v after its supervisor froze (deadline %v + 1 s, plus the %v the machine stalled)", cmd, time.Since(frozen), deadline, sp.StallIn(frozen, now))
		}
		time.Sleep(5 * time.Millisecond)
	}
	sp.Bound(t, "the guard's kill after the supervisor froze (bound deadline + 1 s)", frozen, deadline+time.Second, time.Now())
	t.Logf("the guard killed the command %v after the supervisor froze (deadline %v, last extension ≤ 100 ms before the freeze)", time.Since(frozen).Round(time.Millisecond), deadline)
	if stopped, _ := readProc(sup.Pid()); stopped.state != 'T' {
		t.Fatalf("the supervisor is in state %c, not stopped: the guard was not alone", stopped.state)
	}
	_ = syscall.Kill(sup.Pid(), syscall.SIGCONT)
	await(t, sup.Done(), 10*time.Second, "the thawed supervisor's end")
	b, _ := os.ReadFile(out.Name())
	if !strings.Contains(string(b), "GUARD=true") {
		t.Fatalf("the supervisor does not know its guard killed the group: %q", b)
	}
}

// deadlineSupervisor is the spec of a "deadline-supervisor" helper (a
// supervisor of its own extending a deadline for 20 s) whose command
// writes its pid to pidfile, and the file it creates once the deadline
// is armed; slowStart > 0 is the fault of a start slower than that.
func deadlineSupervisor(dir, pidfile string, deadline, slowStart time.Duration) (Spec, string) {
	armed := filepath.Join(dir, "armed")
	return helperSpec("deadline-supervisor", "HELPER_PIDFILE="+pidfile, "HELPER_ARMED="+armed,
		"HELPER_DEADLINE="+deadline.String(), "HELPER_EXTEND=20s", "HELPER_SLOW_START="+slowStart.String()), armed
}

// awaitArmed waits for a deadline-supervisor to arm its deadline and
// returns when it saw that (after the arming: the deadline runs from
// no later than this).
func awaitArmed(t *testing.T, armed string) time.Time {
	t.Helper()
	waitFor(t, "the helper supervisor's deadline armed", 10*time.Second, func() (bool, string) {
		_, err := os.Stat(armed)
		return err == nil, fmt.Sprintf("%s not created: %v", armed, err)
	})
	return time.Now()
}

// An unprivileged supervisor whose command makes itself root (a set-user-ID
// program, as sudo does) cannot signal it. CheckReachable refuses such a
// command up front; CheckReach finds it; Stop returns ErrOutOfReach within
// its grace and KillTimeout instead of waiting for ever or reporting it dead.
func TestStop_AMemberThatChangedUserIsOutOfReach(t *testing.T) {
	stalltest.Run(t, func(t *testing.T, sp *stalltest.Probe) {
		if os.Geteuid() != 0 {
			t.Skip("needs root to make a set-user-ID root program and run a supervisor as nobody: not run as root here")
		}
		dir, err := os.MkdirTemp("", "supervise-reach-")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(dir) })
		if err := os.Chmod(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		exe, _ := os.Executable()
		sup, setuid := filepath.Join(dir, "supervisor"), filepath.Join(dir, "setuid")
		for _, p := range []string{sup, setuid} {
			copyFile(t, exe, p)
		}
		if err := os.Chmod(setuid, 0o755|os.ModeSetuid); err != nil {
			t.Fatal(err)
		}
		pidfile := filepath.Join(dir, "pids")
		if err := os.WriteFile(pidfile, nil, 0o666); err != nil {
			t.Fatal(err)
		}
		_ = os.Chmod(pidfile, 0o666)
		cmd := exec.Command(sup, "-test.run=^$")
		cmd.Env = []string{helperEnv + "=reach-supervisor", "HELPER_SETUID=" + setuid, "HELPER_PIDFILE=" + pidfile}
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		// Files, not pipes: the root member inherits them and outlives the
		// supervisor, and Wait would wait for a pipe's last writer.
		stdout, stderr := tempOutput(t, dir, "stdout"), tempOutput(t, dir, "stderr")
		cmd.Stdout, cmd.Stderr = stdout.f, stderr.f
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		var ended time.Time
		defer func() {
			// The root member outlives its unprivileged supervisor (a set-user-ID
			// exec clears the parent-death signal): we are root, we end it.
			for _, l := range waitLines(pidfile, 1, 0) {
				if p, err := strconv.Atoi(l); err == nil {
					_ = syscall.Kill(p, syscall.SIGKILL)
					time.Sleep(20 * time.Millisecond)
					var ws syscall.WaitStatus
					_, _ = syscall.Wait4(p, &ws, syscall.WNOHANG, nil)
				}
			}
		}()
		select {
		case err := <-done:
			ended = time.Now()
			if err != nil {
				t.Fatalf("supervisor: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
			}
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			t.Fatalf("the unprivileged supervisor did not finish within 20s (Stop waiting for ever?)\nstdout:\n%s", stdout.String())
		}
		got := stdout.String()
		for _, want := range []string{"CHECKREACHABLE=true", "CGROUP=\"\"", "REACH=supervise: a member of the group is out of reach", "OUTOFREACH=true"} {
			if !strings.Contains(got, want) {
				t.Errorf("the unprivileged supervisor's report lacks %q:\n%s\nstderr:\n%s", want, got, stderr.String())
			}
		}
		if i := strings.Index(got, "TOOK="); i >= 0 {
			// Measured by the supervisor; it ended before we read it.
			ms, _ := strconv.Atoi(strings.TrimSpace(got[i+5:]))
			took := time.Duration(ms) * time.Millisecond
			sp.Bound(t, "Stop of a group with a member out of reach (bound grace 200 ms + KillTimeout + 1 s)", ended.Add(-took), 200*time.Millisecond+KillTimeout+time.Second, ended)
		}
	})
}

type output struct{ f *os.File }

func tempOutput(t *testing.T, dir, name string) output {
	t.Helper()
	f, err := os.Create(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return output{f}
}

func (o output) String() string {
	b, _ := os.ReadFile(o.f.Name())
	return string(b)
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	in, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}

// A guard whose supervisor died before the guard ran has been adopted by
// someone else (init, a subreaper): it must kill its group only, never the
// tree of whoever adopted it. (A guard that took its parent for the
// supervisor killed every process on the host when adopted by init.)
func TestGuard_AdoptedGuardKillsItsGroupOnly(t *testing.T) {
	dir := t.TempDir()
	// The group: one process in a group of its own.
	victimFile, bystanderFile := filepath.Join(dir, "victim"), filepath.Join(dir, "bystander")
	victim := helperSpec("ignore-term", "HELPER_PIDFILE="+victimFile)
	vcmd := exec.Command(victim.Path, victim.Args[1:]...)
	vcmd.Env, vcmd.SysProcAttr = victim.Env, &syscall.SysProcAttr{Setpgid: true}
	// A bystander: our child too (so in the tree of the guard's parent,
	// us), in another group.
	by := helperSpec("ignore-term", "HELPER_PIDFILE="+bystanderFile)
	bcmd := exec.Command(by.Path, by.Args[1:]...)
	bcmd.Env, bcmd.SysProcAttr = by.Env, &syscall.SysProcAttr{Setpgid: true}
	for _, c := range []*exec.Cmd{vcmd, bcmd} {
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Process.Kill(); _ = c.Wait() })
	}
	pidsIn(t, victimFile, 1)
	pidsIn(t, bystanderFile, 1)
	// A supervisor that is already dead: a reaped child's pid.
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	exe, _ := os.Executable()
	guard := &exec.Cmd{Path: exe, Args: []string{GuardName}, Env: []string{guardSupervisorEnv + "=" + strconv.Itoa(dead.Process.Pid)},
		Stdin: strings.NewReader(control{verb: ctlGroup, pid: vcmd.Process.Pid}.String() + "\n"), Stderr: os.Stderr}
	if err := guard.Run(); err != nil && guard.ProcessState.ExitCode() != guardExitKilled {
		t.Fatalf("guard: %v", err)
	}
	if st := guard.ProcessState.ExitCode(); st != guardExitKilled {
		t.Fatalf("guard exit %d, want %d (it killed its group)", st, guardExitKilled)
	}
	if deadline := time.Now().Add(2 * time.Second); true {
		for alive(vcmd.Process.Pid) && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
	}
	if alive(vcmd.Process.Pid) {
		t.Errorf("the guarded group %d still runs after the guard's kill", vcmd.Process.Pid)
	}
	if !alive(bcmd.Process.Pid) {
		t.Fatalf("the guard killed a bystander %d outside its group: it took its adoptive parent's tree for its supervisor's", bcmd.Process.Pid)
	}
}
