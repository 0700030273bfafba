package supervise

import (
	"errors"
	"slices"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// The one kill loop of the supervisor, its guard and its shim, and the
// proofs it ends on.
//
// A kill loop ends only when the lineage is provably empty, never on a
// round that merely saw nothing: a process that forks, calls setsid and
// exits (a "fork-walker") changes pid faster than /proc can be read, and a
// reading that missed it proves nothing. The proofs:
//
//   - cgroup mode: cgroup.events says "populated 0" for the group's cgroup,
//     which counts every process of the whole subtree (nested cgroups
//     included), and cgroup.kill is the kernel's kill of that subtree, which
//     a process forking meanwhile cannot outrun;
//   - tree mode: the lineage's subreaper (the shim; once the shim is dead,
//     the supervisor, to which its orphans went) has no live child but the
//     excluded ones, in two readings of its children that agree. A process
//     hands its children to the subreaper before it becomes a zombie, and a
//     zombie stays the subreaper's child until it is reaped, so a live
//     descendant always has a live ancestor among the subreaper's
//     children (lineageEmpty). The shim, the subreaper itself, has a
//     simpler proof: wait answers ECHILD (shimEmpty).

// killRound is the pause between two rounds of a kill loop.
const killRound = 5 * time.Millisecond

// killUntilGone runs rounds until one proves the lineage empty (true), or
// until passes (false; a zero until never passes). round SIGKILLs every
// member it can find and says whether the lineage is provably empty; stuck
// is called once, KillTimeout after the first round, if it is not.
func killUntilGone(round func() bool, until time.Time, stuck func()) bool {
	began := time.Now()
	for {
		if round() {
			return true
		}
		if !until.IsZero() && time.Now().After(until) {
			return false
		}
		if stuck != nil && time.Since(began) > KillTimeout {
			stuck()
			stuck = nil
		}
		time.Sleep(killRound)
	}
}

// killTree SIGKILLs the command's process group and every process below
// root (none of the excluded pids nor their subtrees) with signalTree, then
// chases root's newest children (chaseChildren).
func killTree(pgid, root int, exclude map[int]bool) {
	if pgid > 1 {
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
	}
	sigkill := func(pid int) { _ = syscall.Kill(pid, syscall.SIGKILL) }
	signalTree(root, exclude, sigkill)
	chaseChildren(root, exclude, sigkill)
}

// chasePasses bounds chaseChildren: a pass is one reading of root's
// children (microseconds with tens of them; 15–19 ms with ten thousand, as
// /proc's children file walks the list from its head at each of the 14
// read calls a reading of that size takes).
const chasePasses = 64

// chaseChildren reads root's children again and again, and signals every
// child it had not seen at once, without reading that child's own children
// first, until two passes in a row find no new one (or chasePasses ran).
// A live descendant always has a live ancestor among root's children
// (lineageEmpty), and the children of a signalled one come back to root
// before it dies, so a fork-walker's hop, which signalTree may have listed
// after it had forked its successor and exited, is chased at the pace of a
// reading, not of a round (below a frozen subreaper a round reads
// thousands of zombies, and a walker that gets a new chance only once a
// round can outrun any number of rounds).
func chaseChildren(root int, exclude map[int]bool, signal func(pid int)) {
	if root <= 0 {
		return
	}
	seen := map[int]bool{}
	for pass, quiet := 0, 0; pass < chasePasses && quiet < 2; pass++ {
		fresh := false
		for _, pid := range newestFirst(childrenOf(root)) {
			if seen[pid] || exclude[pid] || pid <= 1 {
				continue
			}
			seen[pid] = true
			fresh = true
			signal(pid)
		}
		if fresh {
			quiet = 0
		} else {
			quiet++
		}
	}
}

// signalTree calls signal for every process below root (none of the
// excluded pids nor their subtrees). Each process is signalled as soon as its parent's
// children are read, the newest first, and after its own children are
// read (once it is dead they are the subreaper's, after the reading this
// round took). A fork-walker's live hop is the newest child of its
// subreaper and lives a few milliseconds: a round that read the whole
// lineage before signalling any of it (below a frozen supervisor, which
// reaps nothing, thousands of zombies to read) signalled a hop that had
// already forked its successor and exited, round after round. Signalling
// a zombie does nothing, so no process's state is read first; a listed
// pid could name another process only once its parent reaped it and the
// kernel handed the pid out again, between the reading and the signal, as
// after any reading of /proc.
func signalTree(root int, exclude map[int]bool, signal func(pid int)) {
	if root <= 0 {
		return
	}
	for queue := newestFirst(childrenOf(root)); len(queue) > 0; queue = queue[1:] {
		pid := queue[0]
		if exclude[pid] || pid <= 1 {
			continue
		}
		children := newestFirst(childrenOf(pid))
		signal(pid)
		queue = append(queue, children...)
	}
}

// newestFirst reverses a children list, which the kernel keeps in the
// order the children came (forked or adopted).
func newestFirst(pids []int) []int {
	slices.Reverse(pids)
	return pids
}

// liveDescendants lists every process below root that has not exited,
// skipping the subtrees of the excluded pids, read from the children lists
// (/proc/<pid>/task/*/children).
func liveDescendants(root int, exclude map[int]bool) []int {
	if root <= 0 {
		return nil
	}
	var out []int
	for queue := childrenOf(root); len(queue) > 0; queue = queue[1:] {
		pid := queue[0]
		if exclude[pid] {
			continue
		}
		if p, ok := readProc(pid); ok && !p.dead() {
			out = append(out, pid)
		}
		queue = append(queue, childrenOf(pid)...)
	}
	return out
}

// lineageEmpty proves, from any process, that nothing of root's lineage
// runs: root (a child subreaper, which every orphan of the lineage comes
// back to) has no child but the excluded ones that has not exited, in two
// readings of its children that agree. false while root cannot be read.
func lineageEmpty(root int, exclude map[int]bool) bool {
	first, ok := deadChildren(root, exclude)
	if !ok {
		return false
	}
	second, ok := deadChildren(root, exclude)
	return ok && slices.Equal(first, second)
}

// deadChildren lists root's children but the excluded ones, sorted, and
// says whether every one of them has exited (false too when root cannot
// be read).
func deadChildren(root int, exclude map[int]bool) ([]int, bool) {
	if _, ok := readProc(root); !ok {
		return nil, false
	}
	var out []int
	for _, pid := range childrenOf(root) {
		if exclude[pid] {
			continue
		}
		if p, ok := readProc(pid); ok && !p.dead() {
			return nil, false
		}
		out = append(out, pid)
	}
	slices.Sort(out)
	return out, true
}

// shimEmpty proves, in the shim, that it has no child left at all: wait
// answers ECHILD (without reaping anything).
func shimEmpty() bool {
	var info unix.Siginfo
	err := unix.Waitid(unix.P_ALL, 0, &info, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT, nil)
	return errors.Is(err, syscall.ECHILD)
}
