package supervise

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// The supervisor's side of the guard: start it, tell it the group and the
// deadline, watch it, replace it when it dies, release it at the group's
// end.

// guard is the supervisor's end of a running guard.
type guard struct {
	cmd    *exec.Cmd
	exited chan struct{} // closed once it has exited and been reaped
	ctl    *controlPipe  // its stdin
}

// startGuard starts path as a guard. It is registered as one (never a
// member of any group) before any reaper can see it.
func startGuard(path string) (*guard, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("supervise: guard pipe: %w", err)
	}
	defer r.Close()
	cmd := &exec.Cmd{Path: path, Args: []string{GuardName}, Stdin: r, Stderr: os.Stderr,
		Env:         []string{guardSupervisorEnv + "=" + strconv.Itoa(os.Getpid())},
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true}}
	live.Lock()
	err = cmd.Start()
	if err == nil {
		registerLocked(&live.guards, cmd.Process.Pid, true)
	}
	live.Unlock()
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("supervise: start guard %q: %w", path, err)
	}
	gd := &guard{cmd: cmd, exited: make(chan struct{}), ctl: &controlPipe{w: w}}
	go func() {
		_ = cmd.Wait()
		register(&live.guards, cmd.Process.Pid, false)
		close(gd.exited)
	}()
	return gd, nil
}

// watch tells the guard the group it guards — its process group, its shim
// (the root of its lineage), its cgroup — and the instant to kill it at
// unless extended (zero: none).
func (g *guard) watch(grp *Group, killAt time.Time) {
	cs := []control{{verb: ctlGroup, pid: grp.pid}, {verb: ctlRoot, pid: grp.shim, start: grp.shimStart}}
	if grp.cg != nil {
		cs = append(cs, control{verb: ctlCgroup, dir: grp.cg.dir})
	}
	if !killAt.IsZero() {
		cs = append(cs, control{verb: ctlKillAt, at: monoOf(killAt)})
	}
	g.ctl.send(cs...)
}

// release tells the guard the group ended normally and waits for its exit.
// A stopped guard (SIGSTOP, a debugger) reads nothing and would hold the
// group's end for ever: the first time it is seen stopped it is continued,
// and if it is seen stopped again stuckAfter or more after that, it is
// SIGKILLed — the group is gone, nothing is left for it to guard (its death
// is then reported as a loss, releaseGuard).
func (g *guard) release() {
	g.ctl.send(control{verb: ctlDone})
	g.ctl.close()
	var continued time.Time
	for {
		select {
		case <-g.exited:
			return
		case <-time.After(killRound):
		}
		// Signalled through Process, not by pid: once the guard is reaped
		// that reaches no other process.
		if p, ok := readProc(g.cmd.Process.Pid); !ok || !p.stopped() {
			continue
		}
		switch {
		case continued.IsZero():
			continued = time.Now()
			_ = g.cmd.Process.Signal(syscall.SIGCONT)
		case time.Since(continued) >= stuckAfter:
			_ = g.cmd.Process.Signal(syscall.SIGKILL)
		}
	}
}

// fired reports whether the guard killed the group (valid once exited).
func (g *guard) fired() bool {
	return g.cmd.ProcessState != nil && g.cmd.ProcessState.ExitCode() == guardExitKilled
}

// status says how the guard ended (valid once exited).
func (g *guard) status() string {
	if ws, ok := g.cmd.ProcessState.Sys().(syscall.WaitStatus); ok {
		return statusOf(ws).String()
	}
	return g.cmd.ProcessState.String()
}

// guardState is what a Group keeps to replace its guard: the binary, the
// deadline it last gave, and the reports of deaths.
type guardState struct {
	path   string
	mu     sync.Mutex
	cur    *guard
	killAt time.Time // zero: no deadline
	ended  bool      // the group ended: no more replacements
	lost   chan GuardLoss
}

// current is the running guard (nil without Spec.Guard).
func (g *Group) currentGuard() *guard {
	if g.gs == nil {
		return nil
	}
	g.gs.mu.Lock()
	defer g.gs.mu.Unlock()
	return g.gs.cur
}

// GuardLost reports every guard that died while the group ran, at once,
// with the guard started in its place (or why none could be). It never
// closes; nil without Spec.Guard.
func (g *Group) GuardLost() <-chan GuardLoss {
	if g.gs == nil {
		return nil
	}
	return g.gs.lost
}

// keepGuarded watches the guard and, when it dies before the group's end
// without having killed the group, starts another with the same group and
// what is left of the deadline, and reports the loss.
func (g *Group) keepGuarded() {
	for {
		cur := g.currentGuard()
		select {
		case <-cur.exited:
		case <-g.done:
			return
		}
		g.gs.mu.Lock()
		if g.gs.ended || cur.fired() {
			g.gs.mu.Unlock()
			return // releaseGuard reports a death at the end
		}
		loss := GuardLoss{Time: time.Now(), Pid: cur.cmd.Process.Pid, Status: cur.status()}
		next, err := startGuard(g.gs.path)
		if err == nil {
			next.watch(g, g.gs.killAt) // a deadline past: it kills at once
			g.gs.cur, loss.NewPid = next, next.cmd.Process.Pid
		}
		loss.Err = err
		g.gs.mu.Unlock()
		select {
		case g.gs.lost <- loss:
		default: // nobody listens: the loss is still in the next one
		}
		if err != nil {
			return
		}
	}
}

// releaseGuard ends the guard at the group's normal end (before done: no
// guard outlives its group) and says whether it had killed the group.
func (g *Group) releaseGuard() {
	if g.gs == nil {
		return
	}
	g.gs.mu.Lock()
	g.gs.ended = true // keepGuarded replaces no guard from now on
	cur := g.gs.cur
	g.gs.mu.Unlock()
	cur.release()
	// Reaped now, whether it died before the end or exited on "done": one
	// that died without having killed the group is reported here, never by
	// a look before its death was reaped (which could miss it).
	if !cur.fired() && !cur.cmd.ProcessState.Success() {
		select {
		case g.gs.lost <- GuardLoss{Time: time.Now(), Pid: cur.cmd.Process.Pid, Status: cur.status(), Ended: true}:
		default:
		}
	}
}

// Extend moves the deadline the guard and the shim hold to killAt (the
// supervisor calls it on every successful renew): each kills the group
// itself unless extended again before then. It never blocks for long (see
// controlPipe.send).
func (g *Group) Extend(killAt time.Time) {
	if killAt.IsZero() {
		return
	}
	select {
	case <-g.done:
		return
	default:
	}
	c := control{verb: ctlKillAt, at: monoOf(killAt)}
	g.ctl.send(c) // the shim holds it too
	if g.gs == nil {
		return
	}
	g.gs.mu.Lock()
	g.gs.killAt = killAt
	cur := g.gs.cur
	g.gs.mu.Unlock()
	cur.ctl.send(c)
}

// KilledByGuard reports, once Done is closed, whether the guard killed the
// group (its supervisor missed the deadline, see Spec.Deadline).
func (g *Group) KilledByGuard() bool {
	select {
	case <-g.done:
		cur := g.currentGuard()
		return g.fired.Load() || (cur != nil && cur.fired())
	default:
		return false
	}
}
