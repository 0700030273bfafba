package chaos

import (
	"context"
	"syscall"
	"time"
)

// exitState is the life cycle Crash and Stop share: signal the process, wait
// until it has exited (within a grace when one is set), and on Remove start a
// new incarnation when asked. It holds only unexported state, so the fault
// types keep their own exported, JSON-tagged parameters.
type exitState struct {
	signalled
}

// inject sends sig and returns once p has exited; with grace > 0, a process
// still alive after it is an error (and is left running: the caller decides
// whether to kill it).
func (s *exitState) inject(ctx context.Context, p Process, sig syscall.Signal, grace time.Duration) error {
	return s.send(ctx, p, sig, func(ctx context.Context) error {
		if grace > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, grace)
			defer cancel()
		}
		return waitExit(ctx, p)
	})
}

// remove starts a new incarnation when restart is set; otherwise the process
// simply stays gone. Removing a fault not in place does nothing.
func (s *exitState) remove(ctx context.Context, p Process, restart bool) error {
	return s.takeOut(func() error {
		if !restart {
			return nil
		}
		if err := waitExit(ctx, p); err != nil {
			return err
		}
		return p.Restart(ctx)
	})
}
