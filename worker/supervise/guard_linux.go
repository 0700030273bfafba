package supervise

import (
	"bufio"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// The guard's protocol, one line each, supervisor to guard:
//
//	<pgid>              the group to guard (first line)
//	root <pid>          the shim: the group's lineage is below it
//	cgroup <dir>        its cgroup, if it has one
//	deadline <ns>       kill the group unless another deadline comes within ns
//	done                the group ended normally: exit without killing
//
// The end of input without "done" means the supervisor died.
const (
	guardCgroup   = "cgroup "
	guardRoot     = "root "
	guardDeadline = "deadline "
)

// guardSupervisorEnv carries the supervisor's pid to its guard.
const guardSupervisorEnv = "BLOBLEADER_GUARD_SUPERVISOR"

// guardExitKilled is the guard's exit status after it killed the group
// (the supervisor died, or its deadline passed without an extension).
const guardExitKilled = 3

// snapshotEvery: how often the guard notes the supervisor's descendants,
// so it still knows them once the supervisor is dead (they are then
// re-parented away from it).
const snapshotEvery = 100 * time.Millisecond

// RunGuard is a guard's whole life; it returns the exit code. It ignores
// the polite and the job-control signals (a ^C, a ^Z or a service
// manager's SIGTERM to everyone must not end or stop it before the
// supervisor has stopped the group), and lives in a process group of its
// own.
func RunGuard() int {
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
	lines := make(chan string)
	go func() {
		defer close(lines)
		for sc := bufio.NewScanner(os.Stdin); sc.Scan(); {
			lines <- sc.Text()
		}
	}()
	deadline := time.NewTimer(time.Hour)
	deadline.Stop()
	snap := time.NewTicker(snapshotEvery)
	defer snap.Stop()
	for {
		select {
		case l, ok := <-lines:
			switch {
			case !ok:
				// The supervisor is gone (or never named a group: nothing to do).
				return w.kill("the supervisor died")
			case l == guardDone:
				return 0
			case strings.HasPrefix(l, guardRoot):
				w.root, _ = strconv.Atoi(strings.TrimPrefix(l, guardRoot))
			case strings.HasPrefix(l, guardCgroup):
				w.cgroup = strings.TrimPrefix(l, guardCgroup)
			case strings.HasPrefix(l, guardDeadline):
				if ns, err := strconv.ParseInt(strings.TrimPrefix(l, guardDeadline), 10, 64); err == nil {
					deadline.Reset(time.Duration(ns))
				}
			default:
				w.pgid, _ = strconv.Atoi(strings.TrimSpace(l))
				w.snapshot()
			}
		case <-deadline.C:
			return w.kill("no extension of the leadership's deadline came in time (the supervisor is frozen or blocked)")
		case <-snap.C:
			w.snapshot()
		}
	}
}

// guardian is what a guard knows of its group.
type guardian struct {
	supervisor int
	root       int // the shim, below which the lineage is; 0: the supervisor
	pgid       int
	cgroup     string
	known      map[int]uint64 // the supervisor's descendants at the last snapshot: pid → start time
	rep        *reporter      // its reports: never block, never kill it
}

// members are the lineage's live processes now: the shim's descendants
// (the supervisor's, the guard excluded, without a shim), and only while
// the supervisor is alive and our parent: never the tree of whoever adopted
// us, nor orphans adopted by a supervisor that is pid 1.
func (w *guardian) members() []proc {
	if w.supervisor <= 0 || os.Getppid() != w.supervisor {
		return nil
	}
	root := w.supervisor
	if w.root > 0 {
		root = w.root
	}
	var out []proc
	for _, p := range readProcesses().descendants(root, map[int]bool{os.Getpid(): true}) {
		if !p.dead() {
			out = append(out, p)
		}
	}
	return out
}

func (w *guardian) snapshot() {
	if w.pgid <= 1 || w.cgroup != "" {
		return // nothing to guard yet, or the cgroup knows its members
	}
	for _, p := range w.members() {
		w.known[p.pid] = p.start
	}
}

// supervisorGone reports whether the supervisor has died (we were
// re-parented away from it).
func (w *guardian) supervisorGone() bool { return w.supervisor <= 0 || os.Getppid() != w.supervisor }

// kill SIGKILLs the group: its cgroup, its process group, the supervisor's
// descendants now, and those it knew (re-parented away if the supervisor
// died), until none is left alive or two seconds passed. It kills first and
// reports after, through a queue that never blocks. Killed members stay
// zombies until their parent (the supervisor, once it runs again) reaps
// them: a zombie runs nothing.
func (w *guardian) kill(why string) int {
	if w.pgid <= 1 {
		return 0
	}
	stop := time.Now().Add(2 * time.Second)
	for round := 0; ; round++ {
		left := w.killRound()
		if round == 0 {
			w.rep.printf("%s: %s: killed group %d", GuardName, why, w.pgid)
		}
		if left == 0 {
			if w.cgroup != "" && w.supervisorGone() {
				// Nobody else will. The killed may take a moment to leave it.
				for i := 0; i < 100 && os.Remove(w.cgroup) != nil; i++ {
					time.Sleep(10 * time.Millisecond)
				}
			}
			return guardExitKilled
		}
		if time.Now().After(stop) {
			w.rep.printf("%s: %d member(s) of group %d still alive after SIGKILL (out of reach?)", GuardName, left, w.pgid)
			return 1
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// killRound SIGKILLs every member it knows of once and says how many were
// still alive.
func (w *guardian) killRound() int {
	if w.cgroup != "" {
		_ = cgroupKill(w.cgroup)
	}
	_ = syscall.Kill(-w.pgid, syscall.SIGKILL)
	left := 0
	for pid, start := range w.known {
		if pid <= 1 || pid == os.Getpid() {
			continue
		}
		if p, ok := readProc(pid); ok && p.start == start && !p.dead() {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			left++
		}
	}
	for _, p := range w.members() {
		if p.pid <= 1 {
			continue
		}
		w.known[p.pid] = p.start
		_ = syscall.Kill(p.pid, syscall.SIGKILL)
		left++
	}
	if w.cgroup != "" {
		left += len(cgroupPids(w.cgroup))
	}
	return left
}
