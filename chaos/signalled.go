package chaos

import (
	"context"
	"sync"
	"syscall"
)

// signalled is the state and the plumbing of the faults that signal one
// Process: Crash and Stop (through exitState) and Pause, SupervisorFreeze
// and JobStop (which stop it and continue it with SIGCONT). They differ in
// which process they are given, which signal they send and what they await
// after it; each fault type keeps its own file and doc.
type signalled struct {
	mu     sync.Mutex
	target string // the process's name at Inject, for the timeline
	active bool
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
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.active {
		return ErrInjected
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := running(p); err != nil {
		return err
	}
	s.target = p.Name()
	if err := p.Signal(sig); err != nil {
		return err
	}
	s.active = true
	if await == nil {
		return nil
	}
	return await(ctx)
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
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.active {
		return nil
	}
	if forgetFirst {
		s.active = false
	}
	if running(p) != nil {
		s.active = false
		return nil
	}
	if err := p.Signal(syscall.SIGCONT); err != nil {
		return err
	}
	if err := waitState(ctx, p, false); err != nil {
		return err
	}
	s.active = false
	return nil
}
