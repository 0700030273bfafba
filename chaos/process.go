package chaos

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strconv"
	"syscall"
	"time"
)

// Process is the handle the process faults act on: one worker, wherever it
// runs. The local cluster implements it for child processes.
type Process interface {
	// Name identifies the process in the timeline (the worker's identity).
	Name() string
	// Signal delivers sig to the running process.
	Signal(sig syscall.Signal) error
	// Exited is closed once the current incarnation has exited.
	Exited() <-chan struct{}
	// Restart starts a new incarnation after the old one exited, and returns
	// once it runs.
	Restart(ctx context.Context) error
}

// PIDProcess is implemented by processes whose pid the faults may use to
// find the processes around them (GuardKill finds the supervisor's guard).
type PIDProcess interface {
	// Pid is the current incarnation's pid (in the caller's pid namespace).
	Pid() int
}

// ProcessTarget is implemented by the faults that act on one Process
// (Crash, Stop, Pause, SupervisorFreeze, JobStop), so a cluster can hand
// its own process handle to any of them in one place.
type ProcessTarget interface {
	// SetProcess sets the process the fault acts on.
	SetProcess(p Process)
}

// StateReader is implemented by processes whose run state can be read, so
// Pause can confirm that SIGSTOP and SIGCONT took effect.
type StateReader interface {
	// Stopped reports whether the process is stopped by a signal.
	Stopped() (bool, error)
}

// ProcStopped reads /proc/<pid>/stat and reports whether the process is in
// the stopped state (T). It is how a local StateReader answers.
func ProcStopped(pid int) (bool, error) {
	st, err := procState(pid)
	return st == 'T', err
}

// ProcAlive reports whether pid runs: it exists and is neither a zombie (Z)
// nor dead (X). A stat that cannot be read or parsed counts as not running.
func ProcAlive(pid int) bool {
	st, err := procState(pid)
	return err == nil && st != 'Z' && st != 'X'
}

// ProcState is the state letter of /proc/<pid>/stat (R, S, D, T, Z, …).
func ProcState(pid int) (byte, error) { return procState(pid) }

// procState is the state letter of /proc/<pid>/stat.
func procState(pid int) (byte, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	// The state follows the command name, which is in parentheses and may
	// itself contain spaces or parentheses: take the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return 0, fmt.Errorf("chaos: cannot parse /proc/%d/stat", pid)
	}
	return b[i+2], nil
}

// waitExit waits until p has exited or ctx ends.
func waitExit(ctx context.Context, p Process) error {
	select {
	case <-p.Exited():
		return nil
	case <-ctx.Done():
		return fmt.Errorf("%w: %s: %w", ErrStillAlive, p.Name(), ctx.Err())
	}
}

// waitState polls p's run state until it is stopped (want true) or running,
// or ctx ends. Processes that cannot report their state are trusted.
func waitState(ctx context.Context, p Process, want bool) error {
	sr, ok := p.(StateReader)
	if !ok {
		return nil
	}
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		got, err := sr.Stopped()
		if err != nil {
			return fmt.Errorf("chaos: %s: read state: %w", p.Name(), err)
		}
		if got == want {
			return nil
		}
		select {
		case <-p.Exited():
			return fmt.Errorf("%w: %s exited", ErrNotRunning, p.Name())
		case <-ctx.Done():
			return fmt.Errorf("%w: %s (want stopped=%v): %w", ErrNotStopped, p.Name(), want, ctx.Err())
		case <-tick.C:
		}
	}
}

func running(p Process) error {
	if p == nil {
		return ErrNoTarget
	}
	select {
	case <-p.Exited():
		return fmt.Errorf("%w: %s", ErrNotRunning, p.Name())
	default:
		return nil
	}
}

// helperOf is the pid of the live child of the supervisor p whose argv[0]
// is name (its guard or its shim).
func helperOf(p Process, name string) (int, error) {
	if err := running(p); err != nil {
		return 0, err
	}
	pp, ok := p.(PIDProcess)
	if !ok {
		return 0, fmt.Errorf("%w: %s has no pid to find its %s by", ErrNoTarget, p.Name(), name)
	}
	return ChildNamed(pp.Pid(), name)
}

// childrenOf lists pid's children, from /proc/<pid>/task/*/children.
func childrenOf(pid int) []int {
	tasks, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/task")
	if err != nil {
		return nil
	}
	var out []int
	for _, task := range tasks {
		b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/task/" + task.Name() + "/children")
		for _, f := range bytes.Fields(b) {
			if c, err := strconv.Atoi(string(f)); err == nil {
				out = append(out, c)
			}
		}
	}
	return out
}

// awaitDeath returns once pid runs nothing (dead, or a zombie), or ctx ends.
func awaitDeath(ctx context.Context, pid int) error {
	for ProcAlive(pid) {
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w: pid %d: %w", ErrStillAlive, pid, ctx.Err())
		case <-time.After(2 * time.Millisecond):
		}
	}
	return nil
}

// awaitPidState returns once pid is stopped (stopped true) or runs, or is
// gone, or ctx ends.
func awaitPidState(ctx context.Context, pid int, stopped bool) error {
	for {
		st, err := procState(pid)
		if err != nil || st == 'Z' || st == 'X' || (st == 'T') == stopped {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w: pid %d (want stopped=%v): %w", ErrNotStopped, pid, stopped, ctx.Err())
		case <-time.After(2 * time.Millisecond):
		}
	}
}
