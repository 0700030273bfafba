package chaos

import (
	"context"
	"sync"
	"syscall"
)

// stopSignal is the state and the plumbing of the faults that stop one
// Process by signal and continue it with SIGCONT (Pause, SupervisorFreeze,
// JobStop). They differ in which process they are given and which signal
// they send; each fault type keeps its own file and doc.
type stopSignal struct {
	mu     sync.Mutex
	target string // the process's name at Inject, for the timeline
	active bool
}

// targetName is the name recorded at Inject, else p's name ("" without p).
func (s *stopSignal) targetName(p Process) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.target != "" || p == nil {
		return s.target
	}
	return p.Name()
}

// send delivers sig to p once (ErrInjected while it is in place). With
// awaitStop it returns, where the state can be read, once p is stopped.
func (s *stopSignal) send(ctx context.Context, p Process, sig syscall.Signal, awaitStop bool) error {
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
	if !awaitStop {
		return nil
	}
	return waitState(ctx, p, true)
}

// cont sends SIGCONT to p and returns once it runs again; a process that
// exited meanwhile counts as continued. With forgetFirst the fault counts
// as removed even when SIGCONT or the wait fails; otherwise it stays in
// place so that Remove can be tried again.
func (s *stopSignal) cont(ctx context.Context, p Process, forgetFirst bool) error {
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
