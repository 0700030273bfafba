package chaos

import (
	"context"
	"fmt"
	"syscall"
)

// signalled is the state and the plumbing of the faults that signal one
// Process: Crash and Stop (through exitState) and Pause, SupervisorFreeze
// and JobStop (which stop it and continue it with SIGCONT), and of those
// that act on its process tree (ShimKill, ShimStop, GuardKill, GuardStop,
// NameStop).
// They differ in which process they are given, which signal they send and
// what they await after it; each fault type keeps its own file and doc.
type signalled struct {
	place
	target string // the process's name at Inject, for the timeline
}

// name is the name recorded at Inject, else p's name ("" without p).
func (s *signalled) name(p Process) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.target != "" || p == nil {
		return s.target
	}
	return p.Name()
}

// send delivers sig to p once (ErrInjected while it is in place), then,
// still holding the fault, returns what await (if any) returns.
func (s *signalled) send(ctx context.Context, p Process, sig syscall.Signal, await func(context.Context) error) error {
	return s.putInAwaiting("", func() (bool, error) {
		if err := ctx.Err(); err != nil {
			return false, err
		}
		if err := running(p); err != nil {
			return false, err
		}
		s.target = p.Name()
		if err := p.Signal(sig); err != nil {
			return false, err
		}
		if await == nil {
			return true, nil
		}
		return true, await(ctx)
	})
}

// stopped awaits, where the state can be read, that p is stopped.
func stopped(p Process) func(context.Context) error {
	return func(ctx context.Context) error { return waitState(ctx, p, true) }
}

// cont sends SIGCONT to p and returns once it runs again; a process that
// exited meanwhile counts as continued. With forgetFirst the fault counts
// as removed even when SIGCONT or the wait fails; otherwise it stays in
// place so that Remove can be tried again.
func (s *signalled) cont(ctx context.Context, p Process, forgetFirst bool) error {
	return s.takeOutAwaiting(func() (bool, error) {
		if running(p) != nil {
			return true, nil
		}
		if err := p.Signal(syscall.SIGCONT); err != nil {
			return forgetFirst, err
		}
		if err := waitState(ctx, p, false); err != nil {
			return forgetFirst, err
		}
		return true, nil
	})
}

// do is the Inject of a fault that acts on the process tree of p (a
// supervisor's helper, its processes of a name): act runs once while the
// fault is not in place (ErrInjected otherwise) and p runs, and the fault is
// in place, under p's name, once act says it acted (sent) — even when what
// it awaited after failed.
func (s *signalled) do(ctx context.Context, p Process, act func() (sent bool, err error)) error {
	return s.putInAwaiting("", func() (bool, error) {
		if err := ctx.Err(); err != nil {
			return false, err
		}
		if err := running(p); err != nil {
			return false, err
		}
		sent, err := act()
		if sent {
			s.target = p.Name()
		}
		return sent, err
	})
}

// helperSignal is what a fault does to one helper process of a `blobleader
// run` supervisor (ShimKill, ShimStop, GuardKill, GuardStop): which helper, which
// signal, and what runs before and after it.
type helperSignal struct {
	name    string                                   // the helper's argv[0]: supervise.ShimName or supervise.GuardName
	what    string                                   // for errors, e.g. "kill shim"
	sig     syscall.Signal                           // the signal sent
	prepare func(pid int) error                      // runs on the helper's pid before the signal; nil: nothing
	await   func(ctx context.Context, pid int) error // what the fault awaits after the signal
}

// signalHelper is do for a helperSignal: it finds p's helper h.name, runs
// h.prepare on it, sends it h.sig, records its pid in *pid and returns what
// h.await returns. A helper not found, a prepare that fails or a signal not
// delivered leaves the fault out of place and *pid as it was; once the
// signal is sent the fault is in place, even when h.await fails.
func (s *signalled) signalHelper(ctx context.Context, p Process, h helperSignal, pid *int) error {
	return s.do(ctx, p, func() (bool, error) {
		helper, err := helperOf(p, h.name)
		if err != nil {
			return false, err
		}
		if h.prepare != nil {
			if err := h.prepare(helper); err != nil {
				return false, err
			}
		}
		if err := syscall.Kill(helper, h.sig); err != nil {
			return false, fmt.Errorf("chaos: %s %d: %w", h.what, helper, err)
		}
		*pid = helper
		return true, h.await(ctx, helper)
	})
}

// stopHelper is the Inject of a fault that stops one helper (ShimStop,
// GuardStop): it SIGSTOPs p's helper name, records its pid in *pid and
// returns once it is stopped.
func (s *signalled) stopHelper(ctx context.Context, p Process, name, what string, pid *int) error {
	return s.signalHelper(ctx, p, helperSignal{
		name: name, what: what, sig: syscall.SIGSTOP,
		await: func(ctx context.Context, helper int) error { return awaitPidState(ctx, helper, true) },
	}, pid)
}

// continueHelper is the Remove of such a fault: it continues the stopped
// helper pid (one that is gone meanwhile counts as continued) and returns
// once it runs.
func (s *signalled) continueHelper(ctx context.Context, pid int) error {
	return s.undo(func() error {
		if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
			return nil // gone: nothing to continue
		}
		return awaitPidState(ctx, pid, false)
	})
}

// undo is the Remove of such a fault: undo (nil: nothing to undo) runs if
// the fault is in place, which it then no longer is.
func (s *signalled) undo(undo func() error) error {
	return s.takeOutAwaiting(func() (bool, error) {
		if undo == nil {
			return true, nil
		}
		return true, undo()
	})
}

// commandSignal is the plumbing of the faults that make a supervised test
// command do something by a signal to its pid (Escape, ForkWalker).
type commandSignal struct{ place }

// send delivers sig to the command pid once (ErrInjected while in place).
func (c *commandSignal) send(ctx context.Context, what string, pid int, sig syscall.Signal) error {
	return c.putIn("", func() error {
		if err := ctx.Err(); err != nil {
			return err
		}
		if pid <= 1 {
			return fmt.Errorf("%w: %s.PID %d: want the command's pid", ErrInvalid, what, pid)
		}
		if err := syscall.Kill(pid, sig); err != nil {
			return fmt.Errorf("%w: command %d: %v", ErrNotRunning, pid, err)
		}
		return nil
	})
}

// forget takes the fault out of place (what the command did stays done).
func (c *commandSignal) forget() { _ = c.takeOut(nil) }
