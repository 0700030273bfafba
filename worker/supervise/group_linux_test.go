package supervise

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/blobleader/blobleader/worker/stalltest"
)

func TestMain(m *testing.M) {
	if IsGuard() {
		os.Exit(RunGuard())
	}
	if IsShim() {
		os.Exit(RunShim())
	}
	if role := os.Getenv(helperEnv); role != "" {
		runHelper(role)
	}
	os.Exit(m.Run())
}

// waitLines polls path until it has n lines, or gives up after timeout.
func waitLines(path string, n int, timeout time.Duration) []string {
	deadline := time.Now().Add(timeout)
	for {
		b, _ := os.ReadFile(path)
		lines := strings.Fields(string(b))
		if len(lines) >= n || time.Now().After(deadline) {
			return lines
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitFor polls cond until it holds: for timeout plus the stall a CPU
// probe, running for the wait, measured meanwhile (stalltest's
// Probe.Await: at most 3×, then inconclusive, a failure, never a pass). For
// waits only: a bound the design states is judged by Probe.Bound.
func waitFor(t *testing.T, what string, timeout time.Duration, cond func() (bool, string)) {
	t.Helper()
	stalltest.Await(t, stalltest.Config{}, what, timeout, cond)
}

// pidsIn waits for n pids in path and fails t if they do not come.
func pidsIn(t *testing.T, path string, n int) []int {
	t.Helper()
	var lines []string
	waitFor(t, fmt.Sprintf("%d pids in %s", n, path), 10*time.Second, func() (bool, string) {
		lines = waitLines(path, 0, 0)
		return len(lines) >= n, fmt.Sprintf("pids %v", lines)
	})
	var out []int
	for _, l := range lines {
		p, err := strconv.Atoi(l)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, p)
	}
	return out
}

// alive reports whether pid exists and is not a zombie.
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(b, ')')
	return i >= 0 && i+2 < len(b) && b[i+2] != 'Z' && b[i+2] != 'X'
}

// exists reports whether pid exists at all (zombies included).
func exists(pid int) bool {
	_, err := os.Stat("/proc/" + strconv.Itoa(pid))
	return err == nil
}

func await(t *testing.T, ch <-chan struct{}, d time.Duration, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(d):
		t.Fatalf("%s did not happen within %v", what, d)
	}
}

func startT(t *testing.T, s Spec) *Group {
	t.Helper()
	g, err := Start(s)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = g.Stop(syscall.SIGTERM, 0) })
	return g
}

// stopT stops g with Stop(polite, grace) and fails t unless every member
// is reaped. Stop gives up KillTimeout after its SIGKILL (ErrSurvived): a
// timing bound, as SIGKILL acts when the kernel runs the process and the
// reap when it runs us. A group reaped after Stop gave up was late, not
// immortal: judgeStop judges it with sp. A group never reaped fails t.
func stopT(t *testing.T, sp *stalltest.Probe, g *Group, polite syscall.Signal, grace time.Duration) {
	t.Helper()
	began := time.Now()
	err := g.Stop(polite, grace)
	if !errors.Is(err, ErrSurvived) {
		if err != nil {
			t.Fatalf("Stop: %v", err)
		}
		return
	}
	var reaped atomic.Pointer[time.Time]
	go func() {
		<-g.Done()
		now := time.Now()
		reaped.Store(&now)
	}()
	sp.Await(t, "the end of a group Stop said survived SIGKILL", 10*time.Second, func() (bool, string) {
		return reaped.Load() != nil, fmt.Sprintf("group %d not reaped", g.Pid())
	})
	judgeStop(t, sp, err, began, grace, *reaped.Load())
}

// stopBound is the bound the design states for Stop's return after its
// grace (docs/failover.md, "Commands"): KillTimeout on a machine that runs
// what is due, and up to DyingTimeout more on a starved one, where the
// killed members (runnable, the kill pending) wait for the CPU to die. A
// test holding Stop to KillTimeout alone would judge the machine, with a
// CPU probe that cannot see every such wait.
const stopBound = KillTimeout + DyingTimeout

// judgeStop judges a Stop that began at began with grace, returned err
// (ErrSurvived), and whose group was reaped after all at reaped: late by
// more than the stall sp measured, t fails; within it, the attempt is
// inconclusive (Probe.Bound). A group reaped in time that Stop said had
// survived is a fault of Stop's, and fails t.
func judgeStop(t *testing.T, sp *stalltest.Probe, err error, began time.Time, grace time.Duration, reaped time.Time) {
	t.Helper()
	if sp.Bound(t, fmt.Sprintf("the group's end after Stop (%v)", err), began, grace+KillTimeout, reaped) {
		t.Fatalf("Stop: %v; yet the group ended %v after Stop began, within grace %v + KillTimeout",
			err, reaped.Sub(began).Round(time.Millisecond), grace)
	}
	t.FailNow()
}

func TestStart_OwnGroupClosedStdinAndTheGivenEnvironment(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out")
	f, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s := helperSpec("env", "BLOBLEADER_TERM=42")
	s.Stdout = f
	g := startT(t, s)
	await(t, g.Done(), 10*time.Second, "the command's exit")
	if st := g.Status(); st.Signaled() || st.Code != 0 {
		t.Fatalf("status %v, want exit code 0", st)
	}
	b, _ := os.ReadFile(out)
	got := string(b)
	for _, want := range []string{
		"TERM_VAR=42\n",
		"PGID=" + strconv.Itoa(g.Pid()) + " PID=" + strconv.Itoa(g.Pid()) + "\n", // leads its own group
		"STDIN=0 EOF\n", // /dev/null
	} {
		if !strings.Contains(got, want) {
			t.Errorf("command output lacks %q:\n%s", want, got)
		}
	}
}

func TestStatus_ExitCodeAndSignal(t *testing.T) {
	tests := []struct {
		name     string
		role     string
		env      []string
		signal   syscall.Signal // sent after start; 0: none
		wantCode int            // ExitCode(): code or 128+signal
		wantSig  string
	}{
		{"exit 0", "exit", []string{"HELPER_CODE=0"}, 0, 0, ""},
		{"exit 7", "exit", []string{"HELPER_CODE=7"}, 0, 7, ""},
		{"SIGKILL from outside", "ignore-term", nil, syscall.SIGKILL, 128 + 9, "SIGKILL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pidfile := filepath.Join(t.TempDir(), "pids")
			g := startT(t, helperSpec(tt.role, append(tt.env, "HELPER_PIDFILE="+pidfile)...))
			if tt.signal != 0 {
				pidsIn(t, pidfile, 1) // running, its handlers in place
				if err := syscall.Kill(g.Pid(), tt.signal); err != nil {
					t.Fatal(err)
				}
			}
			await(t, g.Done(), 10*time.Second, "the group's end")
			st := g.Status()
			if st.ExitCode() != tt.wantCode || st.SignalName() != tt.wantSig {
				t.Fatalf("status %v: ExitCode %d, signal %q; want %d, %q", st, st.ExitCode(), st.SignalName(), tt.wantCode, tt.wantSig)
			}
		})
	}
}

func TestStop_KillsACommandThatIgnoresSIGTERMAfterTheGrace(t *testing.T) {
	stalltest.Run(t, func(t *testing.T, sp *stalltest.Probe) {
		pidfile := filepath.Join(t.TempDir(), "pids")
		g := startT(t, helperSpec("ignore-term", "HELPER_PIDFILE="+pidfile))
		pid := pidsIn(t, pidfile, 1)[0]
		const grace = 300 * time.Millisecond
		began := time.Now()
		stopT(t, sp, g, syscall.SIGTERM, grace)
		took := time.Since(began)
		if took < grace {
			t.Fatalf("Stop returned after %v, before the %v grace: SIGTERM cannot have killed a command that ignores it", took, grace)
		}
		if !sp.Bound(t, "Stop (bound grace + stopBound)", began, grace+stopBound, began.Add(took)) {
			return
		}
		if exists(pid) {
			t.Fatalf("pid %d still exists (alive or unreaped) after Stop returned", pid)
		}
		if st := g.Status(); st.SignalName() != "SIGKILL" {
			t.Fatalf("status %v, want killed by SIGKILL", st)
		}
	})
}

// Stop with no grace sends no polite signal and waits for none: it kills
// at once. Judged by what the command saw (no SIGTERM reached it), how it
// died (SIGKILL), and stopBound.
func TestStop_WithoutGraceSendsSIGKILLAtOnce(t *testing.T) {
	stalltest.Run(t, func(t *testing.T, sp *stalltest.Probe) {
		dir := t.TempDir()
		pidfile, termfile := filepath.Join(dir, "pids"), filepath.Join(dir, "terms")
		g := startT(t, helperSpec("ignore-term", "HELPER_PIDFILE="+pidfile, "HELPER_TERMFILE="+termfile))
		pidsIn(t, pidfile, 1)
		began := time.Now()
		stopT(t, sp, g, syscall.SIGTERM, 0)
		took := time.Since(began)
		if !sp.Bound(t, "Stop(0) (bound stopBound)", began, stopBound, time.Now()) {
			return
		}
		if b, _ := os.ReadFile(termfile); len(b) > 0 {
			t.Fatalf("Stop(0) sent the command a polite signal first: it noted %q", b)
		}
		if st := g.Status(); st.SignalName() != "SIGKILL" {
			t.Fatalf("status %v, want SIGKILL", st)
		}
		t.Logf("Stop(0) returned %v after it began (KillTimeout %v)", took.Round(time.Millisecond), KillTimeout)
	})
}

// The command forks a grandchild that ignores every catchable signal and
// stays in the group. Whether the command is still running or has already
// exited on its own, Stop returns only when both are dead and reaped.
func TestStop_TakesAGrandchildThatIgnoresSignals(t *testing.T) {
	for _, tc := range []struct {
		name         string
		commandExits bool
	}{{"command still running", false}, {"command exited, grandchild orphaned", true}} {
		t.Run(tc.name, func(t *testing.T) {
			stalltest.Run(t, func(t *testing.T, sp *stalltest.Probe) {
				pidfile := filepath.Join(t.TempDir(), "pids")
				env := []string{"HELPER_PIDFILE=" + pidfile}
				if !tc.commandExits {
					env = append(env, "HELPER_WAIT=1")
				}
				g := startT(t, helperSpec("forker", env...))
				pids := pidsIn(t, pidfile, 2)
				if tc.commandExits {
					await(t, g.Exited(), 10*time.Second, "the command's own exit")
					// The grandchild lives on, adopted by us (the subreaper):
					// the group is not done.
					select {
					case <-g.Done():
						t.Fatal("Done closed while the orphaned grandchild still runs")
					case <-time.After(100 * time.Millisecond):
					}
					for _, p := range pids {
						if p != g.Pid() && !alive(p) {
							t.Fatalf("grandchild %d is not running", p)
						}
					}
					if ppid := parentOf(t, otherThan(pids, g.Pid())); ppid != g.shim {
						t.Fatalf("orphaned grandchild's parent is %d, want the group's shim (%d): the subreaper is not in effect", ppid, g.shim)
					}
				}
				stopT(t, sp, g, syscall.SIGTERM, 200*time.Millisecond)
				for _, p := range pids {
					if exists(p) {
						t.Fatalf("pid %d of the group still exists after Stop returned", p)
					}
				}
			})
		})
	}
}

func otherThan(pids []int, not int) int {
	for _, p := range pids {
		if p != not {
			return p
		}
	}
	return 0
}

func parentOf(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	ppid, err := strconv.Atoi(f[1])
	if err != nil {
		t.Fatal(err)
	}
	return ppid
}

// A supervisor killed with SIGKILL takes its command with it (parent-death
// signal), even a command that ignores SIGTERM.
func TestStart_CommandDiesWithItsSupervisor(t *testing.T) {
	pidfile := filepath.Join(t.TempDir(), "pids")
	sup := startT(t, helperSpec("supervisor", "HELPER_PIDFILE="+pidfile))
	child := pidsIn(t, pidfile, 1)[0]
	if child == sup.Pid() {
		t.Fatal("the pid file names the supervisor, not its command")
	}
	if err := syscall.Kill(sup.Pid(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for alive(child) {
		if time.Now().After(deadline) {
			t.Fatalf("command %d still runs 5s after its supervisor %d was SIGKILLed", child, sup.Pid())
		}
		time.Sleep(5 * time.Millisecond)
	}
	// The orphaned command was re-parented to us (this test process is a
	// subreaper too) and must be reaped by someone: the supervisor's group
	// reaper here takes members of the supervisor's group only, so reap it.
	var ws syscall.WaitStatus
	_, _ = syscall.Wait4(child, &ws, syscall.WNOHANG, nil)
}

func TestResolve_NamesTheProblem(t *testing.T) {
	dir := t.TempDir()
	plain := filepath.Join(dir, "plain")
	if err := os.WriteFile(plain, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		cmd  string
		want error
		text string
	}{
		{"empty", "", ErrNotFound, "empty command"},
		{"not in PATH", "no-such-command-blobleader", ErrNotFound, "not in $PATH"},
		{"missing path", filepath.Join(dir, "missing"), ErrNotFound, "does not exist"},
		{"directory", dir, ErrNotExecutable, "is a directory"},
		{"not executable", plain, ErrNotExecutable, "-rw-r--r--"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Resolve(tt.cmd)
			if !errors.Is(err, tt.want) || !strings.Contains(err.Error(), tt.text) {
				t.Fatalf("Resolve(%q) = %v, want %v mentioning %q", tt.cmd, err, tt.want, tt.text)
			}
		})
	}
	if p, err := Resolve("sh"); err != nil || !filepath.IsAbs(p) {
		t.Fatalf("Resolve(sh) = %q, %v; want an absolute path", p, err)
	}
}

// A supervisor killed with SIGKILL takes with it what its command forked,
// not only the command: the grandchild ignores every polite signal and is
// not reached by the command's parent-death signal.
func TestStart_WhatTheCommandForkedDiesWithItsSupervisor(t *testing.T) {
	pidfile := filepath.Join(t.TempDir(), "pids")
	sup := startT(t, helperSpec("supervisor-of-forker", "HELPER_PIDFILE="+pidfile, "HELPER_GUARD=1"))
	pids := pidsIn(t, pidfile, 2) // the grandchild and the command
	if err := syscall.Kill(sup.Pid(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(3 * time.Second)
	for _, p := range pids {
		for alive(p) {
			if time.Now().After(deadline) {
				t.Fatalf("pid %d of the command's group still runs 3s after its supervisor %d was SIGKILLed (pids %v)", p, sup.Pid(), pids)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	// Re-parented to us (a subreaper too): reap them.
	for _, p := range pids {
		var ws syscall.WaitStatus
		_, _ = syscall.Wait4(p, &ws, syscall.WNOHANG, nil)
	}
}

// After a normal end the guard is told so, exits 0 and is reaped before
// Done: no guard outlives its group, and none kills after the end.
func TestStart_GuardEndsWithItsGroup(t *testing.T) {
	spec := helperSpec("exit", "HELPER_CODE=3")
	spec.Guard = spec.Path
	g := startT(t, spec)
	await(t, g.Done(), 10*time.Second, "the group's end")
	st := g.currentGuard().cmd.ProcessState
	if st == nil || !st.Exited() || st.ExitCode() != 0 {
		t.Fatalf("guard state after Done: %v, want exited 0", st)
	}
	if got := g.Status(); got.Code != 3 {
		t.Fatalf("command status %v, want exit code 3", got)
	}
}

// A stop the supervisor makes is its own: the shim, told to kill, helps,
// but that is no kill by a guard or a shim on their own.
func TestStop_IsNotTakenForAKillByTheGuard(t *testing.T) {
	for _, noCgroup := range []bool{false, true} {
		t.Run(fmt.Sprintf("tree mode %v", noCgroup), func(t *testing.T) {
			stalltest.Run(t, func(t *testing.T, sp *stalltest.Probe) {
				pidfile := filepath.Join(t.TempDir(), "pids")
				spec := helperSpec("ignore-term", "HELPER_PIDFILE="+pidfile)
				spec.Guard, spec.KillAt, spec.NoCgroup = spec.Path, time.Now().Add(time.Hour), noCgroup
				g := startT(t, spec)
				pidsIn(t, pidfile, 1)
				stopT(t, sp, g, syscall.SIGTERM, 50*time.Millisecond)
				if g.KilledByGuard() {
					t.Fatal("KilledByGuard() after the supervisor's own Stop")
				}
			})
		})
	}
}

// A group whose members are all gone has not survived SIGKILL because the
// supervisor's own end of it is slow: here its guard, frozen (cgroup
// freezer: not stopped, just not run) as the group ends, exits on "done"
// only once thawed, KillTimeout + 500 ms after Stop began — as a starved
// machine runs a guard late (a CI run under load: "survived SIGKILL …
// took 1.858s", nothing of the group left). Stop waits for it and returns
// nil.
func TestStop_AGuardSlowToEndIsNotASurvivingMember(t *testing.T) {
	pidfile := filepath.Join(t.TempDir(), "pids")
	spec := helperSpec("ignore-term", "HELPER_PIDFILE="+pidfile)
	spec.Guard, spec.KillAt = spec.Path, time.Now().Add(time.Hour)
	g := startT(t, spec)
	pids := pidsIn(t, pidfile, 1)
	thaw := freeze(t, g.currentGuard().cmd.Process.Pid)
	defer thaw()
	cont := time.AfterFunc(KillTimeout+500*time.Millisecond, thaw)
	defer cont.Stop()
	began := time.Now()
	if err := g.Stop(syscall.SIGKILL, 0); err != nil {
		t.Fatalf("Stop: %v (after %v); want nil: every member was gone, only the guard was late", err, time.Since(began).Round(time.Millisecond))
	}
	if took := time.Since(began); took < KillTimeout {
		t.Fatalf("Stop returned %v after it began, before the frozen guard was thawed: the test showed nothing", took)
	}
	for _, p := range pids {
		if exists(p) {
			t.Fatalf("pid %d of the group still exists after Stop returned", p)
		}
	}
}

// freeze moves pid into a cgroup of its own and freezes it there (the
// cgroup v2 freezer: the process is not stopped, only never run, as on a
// starved machine). The returned thaw may be called any number of times;
// the test skips, saying why, where no such cgroup can be made.
func freeze(t *testing.T, pid int) (thaw func()) {
	t.Helper()
	cg, err := newCgroup()
	if err != nil {
		t.Skipf("no cgroup to freeze a process in here: %v", err)
	}
	t.Cleanup(cg.remove)
	write := func(file, v string) error {
		return os.WriteFile(filepath.Join(cg.dir, file), []byte(v), 0)
	}
	if err := write("cgroup.procs", strconv.Itoa(pid)); err != nil {
		t.Fatalf("move %d into %s: %v", pid, cg.dir, err)
	}
	if err := write("cgroup.freeze", "1"); err != nil {
		t.Skipf("no cgroup freezer here (%v)", err)
	}
	waitFor(t, "the freeze of "+strconv.Itoa(pid), 10*time.Second, func() (bool, string) {
		b, _ := os.ReadFile(filepath.Join(cg.dir, "cgroup.events"))
		return strings.Contains(string(b), "frozen 1"), fmt.Sprintf("cgroup.events: %q", b)
	})
	var once sync.Once
	return func() { once.Do(func() { _ = write("cgroup.freeze", "0") }) }
}

// A guard stopped for good must not hold its group's end: every member is
// gone, so Stop returns nil and Done closes. One stopped by SIGSTOP (an
// operator's, never continued) is continued and told "done": it exits 0,
// no loss to report. One a debugger holds stopped (ptrace: SIGCONT does
// not move it) is SIGKILLed — nothing is left for it to guard — and that
// loss is reported. Before, Stop said the group survived SIGKILL ("no
// member left") after KillTimeout + DyingTimeout, Done never closed, and
// `blobleader run` exited without releasing.
func TestStop_AGuardStoppedForGoodDoesNotHoldTheGroupsEnd(t *testing.T) {
	for _, tc := range []struct {
		name   string
		traced bool // held stopped by a tracer, not by SIGSTOP
	}{{"SIGSTOP", false}, {"held by a debugger", true}} {
		t.Run(tc.name, func(t *testing.T) {
			pidfile := filepath.Join(t.TempDir(), "pids")
			spec := helperSpec("ignore-term", "HELPER_PIDFILE="+pidfile)
			spec.Guard, spec.KillAt = spec.Path, time.Now().Add(time.Hour)
			g := startT(t, spec)
			pidsIn(t, pidfile, 1)
			gd := g.currentGuard()
			guard := gd.cmd.Process.Pid
			defer func() { _ = gd.cmd.Process.Signal(syscall.SIGKILL) }()
			if tc.traced {
				holdTraced(t, guard)
			} else if err := syscall.Kill(guard, syscall.SIGSTOP); err != nil {
				t.Fatal(err)
			}
			began := time.Now()
			if err := g.Stop(syscall.SIGKILL, 0); err != nil {
				t.Fatalf("Stop: %v (after %v); want nil: every member was gone, only the guard was stopped", err, time.Since(began).Round(time.Millisecond))
			}
			await(t, g.Done(), 10*time.Second, "the group's end (Done)")
			st := gd.cmd.ProcessState
			if st == nil {
				t.Fatalf("guard %d not reaped at Done", guard)
			}
			clean := st.Exited() && st.ExitCode() == 0
			killed := st.Sys().(syscall.WaitStatus).Signal() == syscall.SIGKILL
			if (!tc.traced && !clean) || (tc.traced && !killed) {
				t.Fatalf("guard %d ended %v; want exit 0 on done (SIGSTOP), SIGKILL (held by a debugger)", guard, st)
			}
			t.Logf("guard %d ended %v, %v after Stop began", guard, st, time.Since(began).Round(time.Millisecond))
			select {
			case loss := <-g.GuardLost():
				if clean {
					t.Fatalf("a guard that exited 0 on done reported lost: %+v", loss)
				}
			default:
				if !clean {
					t.Fatalf("guard %d was killed at its group's end, and that was not reported", guard)
				}
			}
		})
	}
}

// holdTraced has a "tracer" helper seize pid with ptrace and hold it in a
// trace stop (state t, which SIGCONT does not end) until it dies; the test
// skips, saying why, where ptrace is not allowed.
func holdTraced(t *testing.T, pid int) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	traced := filepath.Join(t.TempDir(), "traced")
	var stderr bytes.Buffer
	tracer := exec.Command(exe, "-test.run=^$")
	tracer.Env = []string{helperEnv + "=tracer", "HELPER_TRACEE=" + strconv.Itoa(pid), "HELPER_TRACED=" + traced}
	tracer.Stderr = &stderr
	if err := tracer.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- tracer.Wait() }()
	t.Cleanup(func() {
		_ = tracer.Process.Kill()
		<-exited
	})
	waitFor(t, "the tracer's hold on "+strconv.Itoa(pid), 10*time.Second, func() (bool, string) {
		select {
		case err := <-exited:
			exited <- err
			if tracer.ProcessState.ExitCode() == tracerRefused {
				t.Skipf("ptrace is not allowed here: %s", bytes.TrimSpace(stderr.Bytes()))
			}
			t.Fatalf("the tracer ended: %v: %s", err, stderr.Bytes())
		default:
		}
		p, ok := readProc(pid)
		_, err := os.Stat(traced)
		return err == nil && ok && p.state == 't', fmt.Sprintf("traced file: %v; pid %d state %c", err, pid, p.state)
	})
}

// A guard that dies as its group ends — the supervisor learns of both at
// once, as when it is thawed after a freeze — is reported all the same
// (GuardLost), whichever of the two it sees first. The group's end looked
// for the guard's death before it was reaped, and then nothing reported
// it (scenario TestRun_GuardKilledAndSupervisorFrozenAtOnceTheDeadlineIsStillHeld:
// "no guard_lost event from w1 after its guard … was SIGKILLed and it was
// thawed", in a CI run on a quiet machine).
func TestStart_AGuardThatDiesAsItsGroupEndsIsReported(t *testing.T) {
	stalltest.Run(t, func(t *testing.T, sp *stalltest.Probe) {
		for i := range 20 {
			pidfile := filepath.Join(t.TempDir(), "pids")
			spec := helperSpec("ignore-term", "HELPER_PIDFILE="+pidfile)
			spec.Guard, spec.KillAt = spec.Path, time.Now().Add(time.Hour)
			g := startT(t, spec)
			pidsIn(t, pidfile, 1)
			guard := g.currentGuard().cmd.Process.Pid
			if err := syscall.Kill(guard, syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			stopT(t, sp, g, syscall.SIGKILL, 0)
			select {
			case loss := <-g.GuardLost():
				if loss.Pid != guard {
					t.Fatalf("run %d: reported guard %d lost, want %d", i, loss.Pid, guard)
				}
			default:
				t.Fatalf("run %d: guard %d was SIGKILLed as its group ended, and its loss was never reported", i, guard)
			}
		}
	})
}
