package supervise

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// The guard's protocol, one line each, supervisor to guard:
//
//	<pgid>              the group to guard (first line)
//	cgroup <dir>        its cgroup, if it has one
//	deadline <ns>       kill the group unless another deadline comes within ns
//	done                the group ended normally: exit without killing
//
// The end of input without "done" means the supervisor died.
const (
	guardCgroup   = "cgroup "
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
	// The supervisor names itself: if it died before we ran, our parent is
	// already someone else (init, a subreaper), whose tree is not ours to
	// kill.
	sup, _ := strconv.Atoi(os.Getenv(guardSupervisorEnv))
	w := &guardian{supervisor: sup, known: map[int]uint64{}}
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
	pgid       int
	cgroup     string
	known      map[int]uint64 // the supervisor's descendants at the last snapshot: pid → start time
}

// members are the supervisor's live descendants now (the guard excluded),
// and only while the supervisor is alive and our parent: never the tree of
// whoever adopted us.
func (w *guardian) members() []proc {
	if w.supervisor <= 0 || os.Getppid() != w.supervisor {
		return nil
	}
	var out []proc
	for _, p := range readProcesses().descendants(w.supervisor, map[int]bool{os.Getpid(): true}) {
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
// died), until none is left alive or two seconds passed. Killed members
// stay zombies until their parent (the supervisor, once it runs again)
// reaps them: a zombie runs nothing.
func (w *guardian) kill(why string) int {
	if w.pgid <= 1 {
		return 0
	}
	fmt.Fprintf(os.Stderr, "%s: %s: killing group %d\n", GuardName, why, w.pgid)
	stop := time.Now().Add(2 * time.Second)
	for {
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
			fmt.Fprintf(os.Stderr, "%s: %d member(s) of group %d still alive after SIGKILL (out of reach?)\n", GuardName, left, w.pgid)
			return 1
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// guard is the supervisor's end of a running guard.
type guard struct {
	cmd *exec.Cmd
	mu  sync.Mutex
	w   *os.File // the pipe's only write end
}

// startGuard starts path as a guard, before the command exists.
func startGuard(path string) (*guard, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("supervise: guard pipe: %w", err)
	}
	defer r.Close()
	cmd := &exec.Cmd{Path: path, Args: []string{GuardName}, Stdin: r, Stderr: os.Stderr,
		Env:         []string{guardSupervisorEnv + "=" + strconv.Itoa(os.Getpid())},
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true}}
	if err := cmd.Start(); err != nil {
		w.Close()
		return nil, fmt.Errorf("supervise: start guard %q: %w", path, err)
	}
	register(&live.guards, cmd.Process.Pid, true)
	return &guard{cmd: cmd, w: w}, nil
}

// send writes one line, bounded: a guard that does not read (frozen with
// the host) must not hold the supervisor. A line that cannot be written in
// time is lost, which errs towards the guard killing the group.
func (g *guard) send(line string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	_ = g.w.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
	_, _ = fmt.Fprintln(g.w, line)
}

// watch tells the guard which group to kill if we die, its cgroup, and the
// first deadline.
func (g *guard) watch(pgid int, cgroup string, deadline time.Duration) {
	g.send(strconv.Itoa(pgid))
	if cgroup != "" {
		g.send(guardCgroup + cgroup)
	}
	if deadline > 0 {
		g.send(guardDeadline + strconv.FormatInt(int64(deadline), 10))
	}
}

// release tells the guard the group ended normally and reaps it.
func (g *guard) release() {
	g.send(guardDone)
	g.mu.Lock()
	g.w.Close()
	g.mu.Unlock()
	_ = g.cmd.Wait()
	register(&live.guards, g.cmd.Process.Pid, false)
}

// fired reports whether the guard killed the group (valid after release).
func (g *guard) fired() bool {
	return g.cmd.ProcessState != nil && g.cmd.ProcessState.ExitCode() == guardExitKilled
}

// Extend moves the guard's deadline to d from now (the supervisor calls it
// on every successful renew). Without a guard it does nothing. It never
// blocks for long (see guard.send).
func (g *Group) Extend(d time.Duration) {
	if g.guard == nil || d <= 0 {
		return
	}
	select {
	case <-g.done:
		return
	default:
	}
	g.guard.send(guardDeadline + strconv.FormatInt(int64(d), 10))
}
