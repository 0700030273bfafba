package supervise

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Group is a started command and its process group (the group ID is the
// command's pid).
type Group struct {
	pid    int
	exited chan struct{} // the command itself has been reaped
	done   chan struct{} // every member of the group has been reaped
	status ExitStatus    // valid once exited is closed
	guard  *guard        // nil without Spec.Guard
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
		}
	})
	return subreaper.err
}

// Start starts the command in a new process group and returns at once. One
// goroutine, locked to the thread that forked (the parent-death signal
// belongs to that thread), reaps the command and then the rest of its group.
func Start(spec Spec) (*Group, error) {
	if err := EnableSubreaper(); err != nil {
		return nil, err
	}
	if spec.Path == "" || len(spec.Args) == 0 {
		return nil, fmt.Errorf("%w: empty command", ErrNotFound)
	}
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		return nil, fmt.Errorf("supervise: %w", err)
	}
	stdout, stderr := spec.Stdout, spec.Stderr
	if stdout == nil {
		stdout = os.Stdout
	}
	if stderr == nil {
		stderr = os.Stderr
	}
	g := &Group{exited: make(chan struct{}), done: make(chan struct{})}
	// 0. The guard first, so there is no moment with a group and no guard
	// (but for the instant between the fork and naming the group to it).
	if spec.Guard != "" {
		if g.guard, err = startGuard(spec.Guard); err != nil {
			devnull.Close()
			return nil, err
		}
	}
	started := make(chan error, 1)
	go func() {
		// 1. Fork on a thread that lives as long as the child: the kernel
		// sends the parent-death signal when the forking *thread* exits, and
		// Go ends a locked thread only when its goroutine exits locked.
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		pid, err := syscall.ForkExec(spec.Path, spec.Args, &syscall.ProcAttr{
			Env:   spec.Env,
			Files: []uintptr{devnull.Fd(), stdout.Fd(), stderr.Fd()},
			Sys: &syscall.SysProcAttr{
				Setpgid:   true, // its own group: pgid = pid
				Pdeathsig: syscall.SIGKILL,
			},
		})
		devnull.Close()
		if err != nil {
			started <- err
			return
		}
		g.pid = pid
		if g.guard != nil {
			g.guard.watch(pid)
		}
		started <- nil
		g.reap()
	}()
	if err := <-started; err != nil {
		if g.guard != nil {
			g.guard.release()
		}
		return nil, startError(spec.Path, err)
	}
	return g, nil
}

func startError(path string, err error) error {
	switch {
	case errors.Is(err, syscall.ENOENT):
		return fmt.Errorf("%w: %q: %v", ErrNotFound, path, err)
	case errors.Is(err, syscall.EACCES), errors.Is(err, syscall.ENOEXEC), errors.Is(err, syscall.EISDIR):
		return fmt.Errorf("%w: %q: %v", ErrNotExecutable, path, err)
	}
	return fmt.Errorf("supervise: start %q: %w", path, err)
}

// reaper poll period while members of the group remain that are not (yet)
// our children: they are re-parented to us when their own parent dies.
const pollGone = 5 * time.Millisecond

// reap waits for the command, then for every other member of its group, and
// closes exited and done. It waits only for children in this group, so it
// never steals another child's exit status from the rest of the program.
func (g *Group) reap() {
	leaderGone := false
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-g.pid, &ws, 0, nil)
		switch {
		case err == nil && pid == g.pid:
			g.status = statusOf(ws)
			leaderGone = true
			close(g.exited)
		case err == nil:
			// A member we had adopted (subreaper) has been reaped.
		case errors.Is(err, syscall.EINTR):
		case errors.Is(err, syscall.ECHILD):
			// None of our children is left in the group. While the command
			// lives it is our child, so this only happens after it is gone.
			if !leaderGone {
				// Should not happen (someone else reaped our child); do not
				// spin, and report what we know.
				g.status = ExitStatus{Code: -1}
				leaderGone = true
				close(g.exited)
			}
			if !g.present() {
				if g.guard != nil {
					g.guard.release() // before done: no guard outlives its group's end
				}
				close(g.done)
				return
			}
			time.Sleep(pollGone)
		default:
			time.Sleep(pollGone)
		}
	}
}

// present reports whether any process (zombies included) has the group ID.
func (g *Group) present() bool {
	err := syscall.Kill(-g.pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// Pid is the command's pid, which is also its process group ID.
func (g *Group) Pid() int { return g.pid }

// Exited is closed once the command itself has exited and been reaped (other
// members of its group may still run).
func (g *Group) Exited() <-chan struct{} { return g.exited }

// Status is how the command ended; valid once Exited is closed.
func (g *Group) Status() ExitStatus {
	<-g.exited
	return g.status
}

// Done is closed once every member of the group is dead and reaped.
func (g *Group) Done() <-chan struct{} { return g.done }

// Signal sends sig to every member of the group. A group that is already
// gone is not an error.
func (g *Group) Signal(sig syscall.Signal) error {
	select {
	case <-g.done:
		return nil
	default:
	}
	if err := syscall.Kill(-g.pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("supervise: kill(-%d, %s): %w", g.pid, signalName(sig), err)
	}
	return nil
}

// Stop ends the whole group and returns once every member is reaped. With a
// positive grace it first sends polite (SIGTERM, or the SIGINT an operator
// sent the supervisor) and SIGCONT, and waits up to grace; then (or at once,
// with grace ≤ 0) it sends SIGKILL and waits up to KillTimeout, returning
// ErrSurvived if a member is still there.
func (g *Group) Stop(polite syscall.Signal, grace time.Duration) error {
	if grace > 0 {
		if err := g.Signal(polite); err != nil {
			return err
		}
		// A stopped member only acts on SIGTERM once continued.
		if err := g.Signal(syscall.SIGCONT); err != nil {
			return err
		}
		t := time.NewTimer(grace)
		select {
		case <-g.done:
			t.Stop()
			return nil
		case <-t.C:
		}
	}
	if err := g.Signal(syscall.SIGKILL); err != nil {
		return err
	}
	t := time.NewTimer(KillTimeout)
	defer t.Stop()
	select {
	case <-g.done:
		return nil
	case <-t.C:
		return fmt.Errorf("%w: group %d, %s after SIGKILL", ErrSurvived, g.pid, KillTimeout)
	}
}

func signalName(sig syscall.Signal) string {
	if n := unix.SignalName(sig); n != "" {
		return n
	}
	return fmt.Sprintf("signal %d", int(sig))
}
