package supervise

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Group is a started command and everything it starts: its process group
// (the group ID is the command's pid), its cgroup where it can have one,
// and otherwise every process below the supervisor, whatever process group
// or session it moved to (the supervisor is a child subreaper, so orphans
// come back to it).
type Group struct {
	pid       int
	exited    chan struct{} // the command itself has been reaped
	done      chan struct{} // every member has been reaped
	status    ExitStatus    // valid once exited is closed
	gs        *guardState   // nil without Spec.Guard
	shim      int           // the command's parent (shim_linux.go)
	shimStart uint64        // its start time: with the pid, names it for ever
	// reports are the shim's; shimEnd its wait status once reaped.
	reports  *reportReader
	shimEnd  atomic.Pointer[syscall.WaitStatus]
	ctl      *controlPipe // the shim's control pipe (deadlines, kill)
	fired    atomic.Bool  // the shim reported it killed the lineage
	shimDied atomic.Bool  // the shim's reports ended without the command's status
	cg       *cgroup      // nil: the process tree only

	mu         sync.Mutex
	outOfReach map[int]error // members a signal could not reach (EPERM), by pid
}

// live holds the pids the reaper of one group must never take for its own:
// shims (each reaped by its group) and guards (reaped by their exec.Cmd).
var live struct {
	sync.Mutex
	shims  map[int]bool
	guards map[int]bool
}

func register(m *map[int]bool, pid int, on bool) {
	live.Lock()
	defer live.Unlock()
	registerLocked(m, pid, on)
}

func registerLocked(m *map[int]bool, pid int, on bool) {
	if *m == nil {
		*m = map[int]bool{}
	}
	if on {
		(*m)[pid] = true
	} else {
		delete(*m, pid)
	}
}

// prune is the set of subtrees below the supervisor that are not this
// group's: guards and other groups' shims.
func (g *Group) prune() map[int]bool {
	live.Lock()
	defer live.Unlock()
	out := map[int]bool{}
	for p := range live.guards {
		out[p] = true
	}
	for p := range live.shims {
		if p != g.shim {
			out[p] = true
		}
	}
	return out
}

var subreaper struct {
	once sync.Once
	err  error
}

// EnableSubreaper makes this process a child subreaper, so orphans of what it
// starts are re-parented to it rather than to init. Start calls it; it is
// exported for callers that want to fail early. Idempotent.
func EnableSubreaper() error {
	subreaper.once.Do(func() {
		if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
			subreaper.err = fmt.Errorf("supervise: prctl(PR_SET_CHILD_SUBREAPER): %w", err)
			return
		}
		go reapAdopted()
	})
	return subreaper.err
}

// adoptedAge: how long an exited child that nobody registered must stay a
// zombie before reapAdopted takes it. A child this process started itself
// (os/exec) is waited for by its starter at once; an orphan adopted from
// elsewhere (pid 1's duty) is waited for by nobody.
const adoptedAge = time.Second

// reapAdopted reaps, for the life of the process, the exited children
// nobody waits for: orphans adopted as a subreaper or as pid 1 that are not
// of any group's lineage (a group's shim reaps its own). Whether or not a
// command runs.
func reapAdopted() {
	seen := map[int]time.Time{}
	for range time.Tick(adoptedAge / 2) {
		live.Lock()
		skip := map[int]bool{}
		for p := range live.guards {
			skip[p] = true
		}
		for p := range live.shims {
			skip[p] = true
		}
		live.Unlock()
		now := time.Now()
		zombies := map[int]bool{}
		for _, pid := range childrenOf(os.Getpid()) {
			if p, ok := readProc(pid); ok && p.dead() && !skip[pid] {
				zombies[pid] = true
			}
		}
		for pid := range seen {
			if !zombies[pid] {
				delete(seen, pid)
			}
		}
		for pid := range zombies {
			if first, ok := seen[pid]; !ok {
				seen[pid] = now
			} else if now.Sub(first) >= adoptedAge {
				var ws syscall.WaitStatus
				_, _ = syscall.Wait4(pid, &ws, syscall.WNOHANG, nil)
				delete(seen, pid)
			}
		}
	}
}

// Start starts the command through its shim, in a new process group (and a
// cgroup of its own where it can have one), and returns once the shim has
// named it. One goroutine then waits for its status, and for the rest of
// what it started to be gone and reaped.
func Start(spec Spec) (*Group, error) {
	if err := EnableSubreaper(); err != nil {
		return nil, err
	}
	switch {
	case spec.Path == "" || len(spec.Args) == 0:
		return nil, fmt.Errorf("%w: empty command", ErrNotFound)
	case spec.Shim == "":
		return nil, errors.New("supervise: Spec.Shim is empty: the command is started through a shim")
	}
	if why, foreign := ProcForeign(); foreign {
		return nil, fmt.Errorf("%w: %s", ErrProcForeign, why)
	}
	g := &Group{exited: make(chan struct{}), done: make(chan struct{})}
	if err := g.makeCgroup(spec.NoCgroup); err != nil {
		return nil, err
	}
	// 0. The guard first, so there is no moment with a group and no guard
	// (but for the instant between the fork and naming the group to it).
	if spec.Guard != "" {
		first, err := startGuard(spec.Guard)
		if err != nil {
			g.dropCgroup()
			return nil, err
		}
		g.gs = &guardState{path: spec.Guard, cur: first, killAt: spec.KillAt, lost: make(chan GuardLoss, 8)}
	}
	// 1. The shim, and through it the command.
	if err := g.startShim(spec); err != nil {
		g.releaseGuard()
		g.dropCgroup()
		var se startErr
		if errors.As(err, &se) {
			return nil, startError(spec.Path, se.errno)
		}
		return nil, err
	}
	// 2. Both holders of the deadline learn it, the guard the group too.
	if !spec.KillAt.IsZero() {
		g.ctl.send(control{verb: ctlKillAt, at: monoOf(spec.KillAt)})
	}
	if g.gs != nil {
		g.gs.cur.watch(g, spec.KillAt)
		go g.keepGuarded()
	}
	go g.reap()
	return g, nil
}

// makeCgroup gives the group a cgroup where it can have one. Without one,
// a /proc that hides processes from us is refused (ErrProcHidden).
func (g *Group) makeCgroup(none bool) error {
	var err error
	if !none {
		g.cg, err = newCgroup() // no cgroup: the process tree is the fallback (Cgroup says which)
	}
	if g.cg != nil {
		return nil
	}
	if why, hidden := ProcHidden(); hidden {
		if err == nil {
			err = errors.New("cgroups not used")
		}
		return fmt.Errorf("%w: %s, and the group has no cgroup (%v)", ErrProcHidden, why, err)
	}
	return nil
}

// startShim starts the shim (shim_linux.go) and waits for it to name the
// command. The shim has no parent-death signal: when we die, it sees its
// control pipe close and kills the lineage itself.
func (g *Group) startShim(spec Spec) error {
	stdout, stderr := spec.Stdout, spec.Stderr
	if stdout == nil {
		stdout = os.Stdout
	}
	if stderr == nil {
		stderr = os.Stderr
	}
	cg := "-"
	if g.cg != nil {
		cg = g.cg.dir
	}
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		return fmt.Errorf("supervise: %w", err)
	}
	defer devnull.Close()
	rep, repW, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("supervise: shim pipe: %w", err)
	}
	defer repW.Close()
	ctlR, ctlW, err := os.Pipe()
	if err != nil {
		rep.Close()
		return fmt.Errorf("supervise: shim pipe: %w", err)
	}
	defer ctlR.Close()
	live.Lock()
	shim, err := syscall.ForkExec(spec.Shim, append([]string{ShimName, cg, spec.Path}, spec.Args...), &syscall.ProcAttr{Env: spec.Env,
		Files: []uintptr{devnull.Fd(), stdout.Fd(), stderr.Fd(), repW.Fd(), ctlR.Fd()},
		Sys:   &syscall.SysProcAttr{Setpgid: true}})
	if err == nil {
		registerLocked(&live.shims, shim, true)
	}
	live.Unlock()
	if err != nil {
		rep.Close()
		ctlW.Close()
		return fmt.Errorf("supervise: start the shim %q: %w", spec.Shim, err)
	}
	g.shim, g.reports, g.ctl = shim, newReportReader(rep), &controlPipe{w: ctlW}
	if p, ok := readProc(shim); ok {
		g.shimStart = p.start
	}
	repW.Close() // only the shim writes: its end closes with it
	if g.pid, err = g.awaitCommand(); err != nil {
		var ws syscall.WaitStatus
		_ = syscall.Kill(shim, syscall.SIGKILL) // it exits after its report anyway
		_, _ = syscall.Wait4(shim, &ws, 0, nil)
		register(&live.shims, shim, false)
		rep.Close()
		ctlW.Close()
		return err
	}
	return nil
}

// dropCgroup removes the group's cgroup (g.cg stays, for Cgroup).
func (g *Group) dropCgroup() {
	if g.cg != nil {
		g.cg.remove()
	}
}

func startError(path string, err error) error {
	switch {
	case errors.Is(err, syscall.ENOENT):
		return fmt.Errorf("%w: %q: %v", ErrNotFound, path, err)
	case errors.Is(err, syscall.ENOEXEC):
		return fmt.Errorf("%w: %q is not a binary this system can run, nor a script starting with #!: %v", ErrNotExecutable, path, err)
	case errors.Is(err, syscall.EACCES), errors.Is(err, syscall.EISDIR):
		return fmt.Errorf("%w: %q: %v", ErrNotExecutable, path, err)
	}
	return fmt.Errorf("supervise: start %q: %w", path, err)
}

// sweepEvery: how often, while the command lives, the zombies it leaves
// behind (orphans re-parented to us that have exited) are reaped.
const sweepEvery = time.Second

// reap waits for the command's status (the shim's report), then for the
// shim and every other member to be gone and reaped — proven so
// (lineageGone), not merely unseen — and closes exited and done. It reaps
// only children that are members or the group's shim: never another
// group's shim, nor a guard.
func (g *Group) reap() {
	sweeping := make(chan struct{})
	go g.sweep(sweeping)
	g.status = g.awaitStatus()
	close(sweeping)
	close(g.exited)
	for {
		g.reapShim()
		g.reapZombies()
		if g.shimEnd.Load() != nil && g.lineageGone() && !g.zombiesLeft() {
			break
		}
		time.Sleep(killRound)
	}
	register(&live.shims, g.shim, false)
	g.releaseGuard() // before done: no guard outlives its group's end
	g.dropCgroup()
	g.reports.f.Close()
	g.ctl.close() // the shim is gone: nothing to hold any more
	close(g.done)
}

// lineageGone proves, once the shim is reaped, that nothing of the group
// runs (kill_linux.go): in cgroup mode the cgroup's subtree holds no
// process; in tree mode the shim exited by itself (it exits 0 only once it
// has no child left), or, if it died first, what it held came to us (a
// subreaper) and no child of ours but guards and other groups' shims runs.
func (g *Group) lineageGone() bool {
	if g.cg != nil {
		return !g.cg.populated()
	}
	if !g.shimLost() {
		return true
	}
	return lineageEmpty(os.Getpid(), g.prune())
}

// reapShim reaps the shim once it has exited (without waiting).
func (g *Group) reapShim() {
	if g.shimEnd.Load() != nil {
		return
	}
	var ws syscall.WaitStatus
	if p, err := syscall.Wait4(g.shim, &ws, syscall.WNOHANG, nil); (err == nil && p == g.shim) || errors.Is(err, syscall.ECHILD) {
		g.shimEnd.Store(&ws)
	}
}

// shimLost reports whether the shim died before the lineage it holds (a
// SIGKILL aimed at it, or a cgroup.kill): its orphans then went to us, not
// to it. A shim that exited by itself (0) had no child left.
func (g *Group) shimLost() bool {
	ws := g.shimEnd.Load()
	return ws != nil && (ws.Signaled() || ws.ExitStatus() != 0)
}

// sweep reaps exited orphans while the command lives, so a long-lived
// command that leaves exited children behind does not fill the table.
func (g *Group) sweep(stop <-chan struct{}) {
	t := time.NewTicker(sweepEvery)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			g.reapZombies()
		}
	}
}

// ourZombies are our exited children still to be reaped, but shims and
// guards (each reaped by its own waiter): what the lineage left us once its
// shim was gone, and orphans adopted from elsewhere (a pid 1 reaps them).
func (g *Group) ourZombies() []int {
	prune := g.prune()
	var out []int
	for _, pid := range childrenOf(os.Getpid()) {
		if p, ok := readProc(pid); ok && p.dead() && !prune[pid] {
			out = append(out, pid)
		}
	}
	return out
}

func (g *Group) reapZombies() {
	for _, pid := range g.ourZombies() {
		var ws syscall.WaitStatus
		_, _ = syscall.Wait4(pid, &ws, syscall.WNOHANG, nil)
	}
}

func (g *Group) zombiesLeft() bool { return len(g.ourZombies()) > 0 }

// members are the live (not exited) processes of the group but the shim:
// its cgroup's whole subtree, the shim's descendants (the shim is the
// lineage's subreaper), the command. Only if the shim died before the
// lineage (its orphans then came to us) and there is no cgroup, every
// process below us that is not a guard's or another group's counts too
// (lineage).
func (g *Group) members() []int {
	seen := map[int]bool{g.shim: true} // the shim is ours, not the command's
	var out []int
	add := func(pid int) {
		if !seen[pid] {
			seen[pid] = true
			out = append(out, pid)
		}
	}
	if g.cg != nil {
		for _, pid := range g.cg.pids() {
			add(pid)
		}
	}
	root, exclude := g.lineage()
	for _, pid := range liveDescendants(root, exclude) {
		add(pid)
	}
	if p, ok := readProc(g.pid); ok && !p.dead() {
		add(g.pid)
	}
	return out
}

// lineage is the subreaper below which the group's processes are and the
// pids below it that are not the group's: the shim and nothing; once the
// shim died (without a cgroup), this process and every guard's and other
// group's pid, and the shim's.
func (g *Group) lineage() (root int, exclude map[int]bool) {
	if g.cg == nil && g.shimLost() {
		exclude = g.prune()
		exclude[g.shim] = true
		return os.Getpid(), exclude
	}
	return g.shim, nil
}

// Pid is the command's pid, which is also its process group ID.
func (g *Group) Pid() int { return g.pid }

// Cgroup is the group's cgroup directory, empty when it has none (no
// writable cgroup v2 with cgroup.kill here: the process tree is used).
func (g *Group) Cgroup() string {
	if g.cg == nil {
		return ""
	}
	return g.cg.dir
}

// Exited is closed once the command itself has exited and been reaped (other
// members may still run).
func (g *Group) Exited() <-chan struct{} { return g.exited }

// Status is how the command ended; valid once Exited is closed.
func (g *Group) Status() ExitStatus {
	<-g.exited
	return g.status
}

// Done is closed once every member is dead and reaped.
func (g *Group) Done() <-chan struct{} { return g.done }

// Signal sends sig to every member. A group that is already gone is not an
// error; a member the signal cannot reach (EPERM: it changed its user) is
// remembered (OutOfReach) and reported as ErrOutOfReach, after every other
// member got the signal. SIGKILL starts with cgroup.kill of the group's
// whole subtree, whatever the members seen.
func (g *Group) Signal(sig syscall.Signal) error {
	if sig == syscall.SIGKILL && g.cg != nil {
		_ = g.cg.kill() // whatever their users; the per-pid kills below are the fallback
	}
	select {
	case <-g.done:
		return nil
	default:
	}
	var denied []int
	sent := map[int]bool{g.shim: true} // each member once; never the shim
	signal := func(pid int) {
		if sent[pid] {
			return
		}
		sent[pid] = true
		if err := syscall.Kill(pid, sig); errors.Is(err, syscall.EPERM) {
			if p, ok := readProc(pid); ok && !p.dead() {
				denied = append(denied, pid)
			}
		}
	}
	_ = syscall.Kill(-g.pid, sig) // the process group, in one go
	if g.cg != nil {
		for _, pid := range g.cg.pids() {
			signal(pid)
		}
	}
	root, exclude := g.lineage()
	signalTree(root, exclude, signal) // as it reads: a fork-walker outruns a list
	if p, ok := readProc(g.pid); ok && !p.dead() {
		signal(g.pid)
	}
	if len(denied) == 0 {
		return nil
	}
	err := fmt.Errorf("%w: kill(%v, %s): %w", ErrOutOfReach, denied, signalName(sig), syscall.EPERM)
	g.mu.Lock()
	if g.outOfReach == nil {
		g.outOfReach = map[int]error{}
	}
	for _, pid := range denied {
		g.outOfReach[pid] = err
	}
	g.mu.Unlock()
	return err
}

// signalShim sends sig to the shim unless it has been reaped (its pid may
// be another process's by then).
func (g *Group) signalShim(sig syscall.Signal) {
	if g.shimEnd.Load() == nil {
		_ = syscall.Kill(g.shim, sig)
	}
}

// ShimStopped reports whether the command's shim is stopped (SIGSTOP, a
// debugger's stop): a stopped shim reaps nothing and reports nothing, so
// the command's end can no longer be learned from it.
func (g *Group) ShimStopped() bool {
	if g.shimEnd.Load() != nil {
		return false
	}
	p, ok := readProc(g.shim)
	return ok && p.start == g.shimStart && p.stopped()
}

// ShimLost reports, once Exited is closed, whether the shim died before it
// could report the command's status (SIGKILLed alone: the command died of
// its parent-death signal, what it started lived on until the group was
// stopped).
func (g *Group) ShimLost() bool {
	<-g.exited
	return g.shimDied.Load()
}

// Running reports whether any member of the group runs (not only the
// command: what it started too), as /proc and the cgroup show it now.
func (g *Group) Running() bool {
	select {
	case <-g.done:
		return false
	default:
	}
	return len(g.members()) > 0
}

// CheckReach reports ErrOutOfReach, naming them, when some live member
// cannot be signalled by this process (it changed its user: sudo, a setuid
// program). With a cgroup every member is in reach (cgroup.kill does not
// depend on the member's user) unless it left the cgroup.
func (g *Group) CheckReach() error {
	select {
	case <-g.done:
		return nil
	default:
	}
	var inCgroup map[int]bool
	if g.cg != nil {
		inCgroup = map[int]bool{}
		for _, pid := range g.cg.pids() {
			inCgroup[pid] = true
		}
	}
	var denied []int
	for _, pid := range g.members() {
		if inCgroup[pid] {
			continue
		}
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.EPERM) {
			denied = append(denied, pid)
		}
	}
	if len(denied) > 0 {
		return fmt.Errorf("%w: pids %v (changed user; this supervisor may not signal them)", ErrOutOfReach, denied)
	}
	return nil
}

// Stop ends every member and returns once every one is reaped. With a
// positive grace it first sends polite (SIGTERM, or the SIGINT an operator
// sent the supervisor) and SIGCONT, and waits up to grace; then (or at once,
// with grace ≤ 0) it kills the lineage — the shim is told to kill it too —
// in rounds (kill_linux.go) until it is proven gone, for up to
// KillTimeout, and then for as long as what is left is only waiting for
// the CPU (survivors), up to DyingTimeout more. A stopped shim is continued
// first, and SIGKILLed if it stays stopped: it would reap nothing, and the
// lineage then comes to us. A stopped guard cannot hold the end either
// (guard.release). It always returns within grace + KillTimeout +
// DyingTimeout (plus a round): nil once every member is reaped,
// ErrOutOfReach when a member could not be signalled and is still there,
// or ErrSurvived, naming what was left, when a member stayed in a state
// SIGKILL should have ended or the group was not gone in time.
func (g *Group) Stop(polite syscall.Signal, grace time.Duration) error {
	g.signalShim(syscall.SIGCONT)
	if grace > 0 {
		_ = g.Signal(polite)
		// A stopped member only acts on SIGTERM once continued.
		_ = g.Signal(syscall.SIGCONT)
		t := time.NewTimer(grace)
		select {
		case <-g.done:
			t.Stop()
			return nil
		case <-t.C:
		}
	}
	g.ctl.send(control{verb: ctlKill})
	var killErr error
	round := func() bool {
		select {
		case <-g.done:
			return true
		default:
		}
		if err := g.Signal(syscall.SIGKILL); err != nil {
			killErr = err
		}
		if g.ShimStopped() {
			g.signalShim(syscall.SIGKILL)
		}
		return false
	}
	began := time.Now()
	until := began.Add(KillTimeout)
	var stuck map[procID]proc
	for {
		if killUntilGone(round, until, nil) {
			return nil
		}
		if killErr != nil {
			return killErr
		}
		left := g.survivors(stuck)
		if len(left.stuck) > 0 || time.Since(began) >= KillTimeout+DyingTimeout {
			return fmt.Errorf("%w: group %d, %v after SIGKILL: %s", ErrSurvived, g.pid, time.Since(began).Round(time.Millisecond), left)
		}
		stuck, until = left.notRunnable, time.Now().Add(stuckAfter)
	}
}

// stuckAfter is how long a member must stay in a state SIGKILL ends, once
// KillTimeout has passed, to count as having survived it: a process may be
// seen in one for an instant (asleep as the kill is sent, a member forked
// since the last round).
const stuckAfter = 100 * time.Millisecond

// procID names one process for ever: a pid and its start time.
type procID struct {
	pid   int
	start uint64
}

// leftOver is what Stop found of a group not yet gone past KillTimeout.
type leftOver struct {
	dying       []proc          // runnable: taken by the kill, waiting for the CPU to die
	notRunnable map[procID]proc // alive in a state SIGKILL ends (asleep, stopped, D)
	stuck       []proc          // in notRunnable at the previous look too: survived SIGKILL
}

// survivors sorts the group's live members (sortLeft).
func (g *Group) survivors(prev map[procID]proc) leftOver {
	var ps []proc
	for _, pid := range g.members() {
		if p, ok := readProc(pid); ok {
			ps = append(ps, p)
		}
	}
	return sortLeft(ps, prev)
}

// sortLeft sorts what is left of a group after SIGKILL: the dead are
// done; a runnable member is dying; one in any other state now that was
// in one at the previous look (prev: the same process) is stuck. "Runnable
// is dying" holds because Stop's rounds SIGKILL every member before each
// look: a runnable process with SIGKILL pending dies the moment it runs.
func sortLeft(ps []proc, prev map[procID]proc) leftOver {
	left := leftOver{notRunnable: map[procID]proc{}}
	for _, p := range ps {
		switch {
		case p.dead():
		case p.state == 'R':
			left.dying = append(left.dying, p)
		default:
			id := procID{p.pid, p.start}
			left.notRunnable[id] = p
			if _, seen := prev[id]; seen {
				left.stuck = append(left.stuck, p)
			}
		}
	}
	return left
}

// String says what was left: the stuck members and their states, else the
// dying ones, else the ones seen in a state SIGKILL ends at one look only
// (at DyingTimeout), else that every member was gone and the group's own
// end (shim, guard) was not done.
func (l leftOver) String() string {
	list := func(ps []proc, what string) string {
		var b strings.Builder
		inD := false
		for i, p := range ps {
			if i > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "%d (state %c)", p.pid, p.state)
			inD = inD || p.state == 'D'
		}
		if inD {
			what += " (D: uninterruptible sleep, in the kernel)"
		}
		return fmt.Sprintf("member(s) %s %s", b.String(), what)
	}
	switch {
	case len(l.stuck) > 0:
		return list(l.stuck, "still there in a state SIGKILL ends")
	case len(l.dying) > 0:
		return list(l.dying, "killed but not yet run to their end (runnable): the machine gave them no CPU")
	case len(l.notRunnable) > 0:
		ps := make([]proc, 0, len(l.notRunnable))
		for _, p := range l.notRunnable {
			ps = append(ps, p)
		}
		sort.Slice(ps, func(i, j int) bool { return ps[i].pid < ps[j].pid })
		return list(ps, "still there, in a state SIGKILL ends, at the last look")
	}
	return "no member left; the group's own end (its shim's report and exit, its guard's) was not done"
}

func signalName(sig syscall.Signal) string {
	if n := unix.SignalName(sig); n != "" {
		return n
	}
	return fmt.Sprintf("signal %d", int(sig))
}
