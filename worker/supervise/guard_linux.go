package supervise

import (
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"
)

// guardSupervisorEnv carries the supervisor's pid to its guard.
const guardSupervisorEnv = "BLOBLEADER_GUARD_SUPERVISOR"

// guardExitKilled is the guard's exit status after it killed the group
// (the supervisor died, or its deadline passed without an extension).
const guardExitKilled = 3

// guardComm is the guard's process name (comm, at most 15 bytes): not the
// binary's, so that `killall blobleader` stops, or kills, the supervisor
// alone while the guard holds the deadline.
const guardComm = "bl-run-guard"

// snapshotEvery: how often the guard notes the lineage's processes, so it
// still knows them if the supervisor and the shim both die (the lineage is
// then re-parented to whoever is above the supervisor).
const snapshotEvery = 100 * time.Millisecond

// RunGuard is a guard's whole life; it returns the exit code. It ignores
// the polite and the job-control signals (a ^C, a ^Z or a service
// manager's SIGTERM to everyone must not end or stop it before the
// supervisor has stopped the group), and lives in a process group of its
// own. Its messages are protocol_linux.go's.
func RunGuard() int {
	setComm(guardComm)
	signal.Ignore(syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGTSTP, syscall.SIGTTIN, syscall.SIGTTOU)
	// Its output may be a pipe whose reader is gone, a full pipe or a full
	// disk: a write must neither kill it (SIGPIPE: caught, so the write
	// fails with EPIPE) nor hold it (reports go through a bounded queue).
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
	rep := newReporter(os.Stderr)
	defer rep.close(reportFlush)
	// The supervisor names itself: if it died before we ran, our parent is
	// already someone else (init, a subreaper), whose tree is not ours to
	// kill.
	sup, _ := strconv.Atoi(os.Getenv(guardSupervisorEnv))
	w := &guardian{supervisor: sup, known: map[int]uint64{}, rep: rep}
	snap := time.NewTicker(snapshotEvery)
	defer snap.Stop()
	why := holdDeadline(controls(os.Stdin), w.apply, snap.C, w.snapshot)
	if why == "" {
		return 0 // done: the group ended normally
	}
	return w.kill(why)
}

// guardian is what a guard knows of its group.
type guardian struct {
	supervisor int
	pgid       int
	shim       int    // the lineage's subreaper while it lives
	shimStart  uint64 // with shim, names it for ever
	cgroup     string
	known      map[int]uint64 // the lineage at the last snapshot: pid → start time
	rep        *reporter      // its reports: never block, never kill it
}

// apply takes one message that names the group.
func (w *guardian) apply(c control) {
	switch c.verb {
	case ctlGroup:
		w.pgid = c.pid
		w.snapshot()
	case ctlRoot:
		w.shim, w.shimStart = c.pid, c.start
	case ctlCgroup:
		w.cgroup = c.dir
	}
}

// root is the lineage's subreaper now: the shim while it lives; once it is
// dead, the supervisor, to which its orphans went (while the supervisor
// lives and is our parent: never the tree of whoever adopted us). 0: none.
func (w *guardian) root() int {
	if p, ok := readProc(w.shim); ok && w.shim > 0 && p.start == w.shimStart && !p.dead() {
		return w.shim
	}
	if w.supervisor > 0 && os.Getppid() == w.supervisor {
		return w.supervisor
	}
	return 0
}

func (w *guardian) exclude() map[int]bool { return map[int]bool{os.Getpid(): true} }

// snapshot notes the lineage's live processes (in tree mode: a cgroup
// knows its members itself).
func (w *guardian) snapshot() {
	if w.pgid <= 1 || w.cgroup != "" {
		return // nothing to guard yet, or the cgroup knows its members
	}
	for _, pid := range liveDescendants(w.root(), w.exclude()) {
		if p, ok := readProc(pid); ok {
			w.known[pid] = p.start
		}
	}
}

// kill kills the group — its cgroup, its process group, everything below
// its subreaper (the shim, or the supervisor once the shim is dead) and
// what it knew of it — until the lineage is provably gone (kill_linux.go).
// It kills first and reports after, through a queue that never blocks.
// Killed members stay zombies until their parent (the supervisor, once it
// runs again) reaps them: a zombie runs nothing.
func (w *guardian) kill(why string) int {
	if w.pgid <= 1 {
		return 0
	}
	first := true
	killUntilGone(func() bool {
		gone := w.round()
		if first {
			w.rep.printf("%s: %s: killed group %d", GuardName, why, w.pgid)
			first = false
		}
		return gone
	}, time.Time{}, func() {
		w.rep.printf("%s: members of group %d still alive %s after SIGKILL (out of reach?); still killing", GuardName, w.pgid, KillTimeout)
	})
	if w.cgroup != "" && (w.supervisor <= 0 || os.Getppid() != w.supervisor) {
		_ = removeTree(w.cgroup, 100) // the supervisor is gone: nobody else will
	}
	return guardExitKilled
}

// round SIGKILLs every member it can find once and says whether the
// lineage is provably gone. With a cgroup, the cgroup is the group (the
// kernel kills its subtree; what else is below the supervisor is no
// member); without one, everything below the lineage's subreaper.
func (w *guardian) round() bool {
	if w.cgroup != "" {
		_ = cgroupKill(w.cgroup)
		_ = syscall.Kill(-w.pgid, syscall.SIGKILL)
		return !cgroupPopulated(w.cgroup)
	}
	root := w.root()
	killTree(w.pgid, root, w.exclude())
	knownAlive := false
	for pid, start := range w.known {
		if p, ok := readProc(pid); ok && p.start == start && !p.dead() && pid > 1 && pid != os.Getpid() {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			killTree(0, pid, nil) // what it started since the snapshot
			knownAlive = true
		}
	}
	if root > 0 {
		return !knownAlive && lineageEmpty(root, w.exclude())
	}
	// Neither the shim nor the supervisor: the lineage went to whoever is
	// above the supervisor; what we knew of it is all we can reach
	// (docs/failover.md#commands-under-blobleader-run, what tree mode
	// cannot promise).
	return !knownAlive
}
