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

// killTree SIGKILLs the command's process group and every live process
// below root (none of the excluded pids nor their subtrees); it returns
// how many it signalled.
func killTree(pgid, root int, exclude map[int]bool) int {
	if pgid > 1 {
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
	}
	n := 0
	for _, pid := range liveDescendants(root, exclude) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
		n++
	}
	return n
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
