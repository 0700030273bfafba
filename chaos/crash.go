package chaos

import (
	"context"
	"sync"
	"syscall"
)

// Crash kills a worker with SIGKILL: no step-down, no release; the lease is
// freed only when it expires. Remove starts the worker again when Restart is
// set (a crashed process is otherwise simply gone).
type Crash struct {
	Restart bool `json:"restart"` // start a new incarnation on Remove

	Process Process `json:"-"`

	mu     sync.Mutex
	target string
	active bool
}

var _ Fault = (*Crash)(nil)

func (f *Crash) Kind() Kind { return KindCrash }

// Target is the name of the incarnation that was (or will be) killed.
func (f *Crash) Target() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.target != "" {
		return f.target
	}
	if f.Process == nil {
		return ""
	}
	return f.Process.Name()
}

// Inject sends SIGKILL and returns once the process has exited.
func (f *Crash) Inject(ctx context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.active {
		return ErrInjected
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := running(f.Process); err != nil {
		return err
	}
	f.target = f.Process.Name()
	if err := f.Process.Signal(syscall.SIGKILL); err != nil {
		return err
	}
	f.active = true
	return waitExit(ctx, f.Process)
}

// Remove restarts the worker when Restart is set.
func (f *Crash) Remove(ctx context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.active {
		return nil
	}
	if f.Restart {
		if err := waitExit(ctx, f.Process); err != nil {
			return err
		}
		if err := f.Process.Restart(ctx); err != nil {
			return err
		}
	}
	f.active = false
	return nil
}
