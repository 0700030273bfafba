package chaos

import (
	"context"
	"sync"
	"syscall"
	"time"
)

// Stop stops a worker gracefully with SIGTERM: it cancels its task, releases
// the lease and exits, so a follower takes over within one retry period.
// Remove starts the worker again when Restart is set.
type Stop struct {
	Grace   int64 `json:"grace"`   // milliseconds to wait for the exit; 0 = as long as ctx allows
	Restart bool  `json:"restart"` // start a new incarnation on Remove

	Process Process `json:"-"`

	mu     sync.Mutex
	target string
	active bool
}

var _ Fault = (*Stop)(nil)

func (f *Stop) Kind() Kind { return KindGraceful }

// Target is the name of the incarnation that was (or will be) stopped.
func (f *Stop) Target() string {
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

// Inject sends SIGTERM and returns once the process has exited; a process
// still alive after Grace is an error (it is left running: the caller decides
// whether to kill it).
func (f *Stop) Inject(ctx context.Context) error {
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
	if err := f.Process.Signal(syscall.SIGTERM); err != nil {
		return err
	}
	f.active = true
	if f.Grace > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(f.Grace)*time.Millisecond)
		defer cancel()
	}
	return waitExit(ctx, f.Process)
}

// Remove restarts the worker when Restart is set.
func (f *Stop) Remove(ctx context.Context) error {
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
