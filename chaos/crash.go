package chaos

import (
	"context"
	"syscall"
)

// Crash kills a worker with SIGKILL: no step-down, no release; the lease is
// freed only when it expires. Remove starts the worker again when Restart is
// set (a crashed process is otherwise simply gone).
type Crash struct {
	Restart bool `json:"restart"` // start a new incarnation on Remove

	Process Process `json:"-"`

	exitState
}

var (
	_ Fault         = (*Crash)(nil)
	_ ProcessTarget = (*Crash)(nil)
)

func (f *Crash) SetProcess(p Process) { f.Process = p }

func (f *Crash) Kind() Kind { return KindCrash }

// Target is the name of the incarnation that was (or will be) killed.
func (f *Crash) Target() string { return f.name(f.Process) }

// Inject sends SIGKILL and returns once the process has exited.
func (f *Crash) Inject(ctx context.Context) error {
	return f.inject(ctx, f.Process, syscall.SIGKILL, 0)
}

// Remove restarts the worker when Restart is set.
func (f *Crash) Remove(ctx context.Context) error { return f.remove(ctx, f.Process, f.Restart) }
