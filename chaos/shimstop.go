package chaos

import (
	"context"
	"fmt"
	"sync"
	"syscall"

	"github.com/blobleader/blobleader/worker/supervise"
)

// ShimStop SIGSTOPs the command shim of a `blobleader run` supervisor alone,
// as a debugger attaching to it, or an operator's `kill -STOP` of the wrong
// pid, would; the supervisor and the command run on. A stopped shim reaps
// nothing and reports nothing: whether the supervisor still learns that its
// command ended (it crashes meanwhile, or the supervisor is told to stop)
// is what the fault shows. Remove continues it with SIGCONT.
type ShimStop struct {
	Process Process `json:"-"` // the supervisor (must implement PIDProcess)
	Shim    int     `json:"shim_pid"`

	mu     sync.Mutex
	target string
	active bool
}

var (
	_ Fault         = (*ShimStop)(nil)
	_ ProcessTarget = (*ShimStop)(nil)
)

func (f *ShimStop) SetProcess(p Process) { f.Process = p }

func (f *ShimStop) Kind() Kind { return KindShimStop }

// Target is the name of the supervisor whose shim is stopped.
func (f *ShimStop) Target() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.target == "" && f.Process != nil {
		return f.Process.Name()
	}
	return f.target
}

// Inject SIGSTOPs the supervisor's shim and returns once it is stopped.
func (f *ShimStop) Inject(ctx context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.active {
		return ErrInjected
	}
	shim, err := helperOf(f.Process, supervise.ShimName)
	if err != nil {
		return err
	}
	if err := syscall.Kill(shim, syscall.SIGSTOP); err != nil {
		return fmt.Errorf("chaos: stop shim %d: %w", shim, err)
	}
	f.target, f.Shim, f.active = f.Process.Name(), shim, true
	return awaitPidState(ctx, shim, true)
}

// Remove continues the shim (one that is gone meanwhile counts as
// continued) and returns once it runs.
func (f *ShimStop) Remove(ctx context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.active {
		return nil
	}
	f.active = false
	if err := syscall.Kill(f.Shim, syscall.SIGCONT); err != nil {
		return nil // gone: nothing to continue
	}
	return awaitPidState(ctx, f.Shim, false)
}
