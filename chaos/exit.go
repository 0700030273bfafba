package chaos

import (
	"context"
	"sync"
	"syscall"
	"time"
)

// exitState is the life cycle Crash and Stop share: signal the process, wait
// until it has exited (within a grace when one is set), and on Remove start a
// new incarnation when asked. It holds only unexported state, so the fault
// types keep their own exported, JSON-tagged parameters.
type exitState struct {
	mu     sync.Mutex
	target string // the incarnation that was signalled
	active bool
}

// name is the incarnation that was (or will be) signalled.
func (s *exitState) name(p Process) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.target != "" {
		return s.target
	}
	if p == nil {
		return ""
	}
	return p.Name()
}

// inject sends sig and returns once p has exited; with grace > 0, a process
// still alive after it is an error (and is left running: the caller decides
// whether to kill it).
func (s *exitState) inject(ctx context.Context, p Process, sig syscall.Signal, grace time.Duration) error {
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
	if grace > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, grace)
		defer cancel()
	}
	return waitExit(ctx, p)
}

// remove starts a new incarnation when restart is set; otherwise the process
// simply stays gone. Removing a fault not in place does nothing.
func (s *exitState) remove(ctx context.Context, p Process, restart bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.active {
		return nil
	}
	if restart {
		if err := waitExit(ctx, p); err != nil {
			return err
		}
		if err := p.Restart(ctx); err != nil {
			return err
		}
	}
	s.active = false
	return nil
}
