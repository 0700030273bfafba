package chaos

import (
	"context"
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

	exitState
}

var (
	_ Fault         = (*Stop)(nil)
	_ ProcessTarget = (*Stop)(nil)
)

func (f *Stop) SetProcess(p Process) { f.Process = p }

func (f *Stop) Kind() Kind { return KindGraceful }

// Target is the name of the incarnation that was (or will be) stopped.
func (f *Stop) Target() string { return f.name(f.Process) }

// Inject sends SIGTERM and returns once the process has exited; a process
// still alive after Grace is an error (it is left running: the caller decides
// whether to kill it).
func (f *Stop) Inject(ctx context.Context) error {
	return f.inject(ctx, f.Process, syscall.SIGTERM, time.Duration(f.Grace)*time.Millisecond)
}

// Remove restarts the worker when Restart is set.
func (f *Stop) Remove(ctx context.Context) error { return f.remove(ctx, f.Process, f.Restart) }
