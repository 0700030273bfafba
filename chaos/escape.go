package chaos

import (
	"context"
	"fmt"
	"sync"
	"syscall"
)

// EscapeSignal is the signal a supervised test command takes as "start
// escaping jobs now" (test/cmd/ledgercmd does).
const EscapeSignal = syscall.SIGUSR1

// Escape makes a supervised command do what a cron daemon, a shell with job
// control or a process manager does: start long jobs in a new session and
// in a new process group, out of the command's own process group. The
// command does it itself on EscapeSignal (a test command that implements
// it, test/cmd/ledgercmd); the fault delivers the signal to the command's
// pid. Nothing is removed: what happens to the jobs when the command's
// leadership ends is what the fault shows.
type Escape struct {
	PID  int    `json:"pid"`  // the supervised command
	Name string `json:"name"` // its supervisor, for the timeline

	mu     sync.Mutex
	active bool
}

var _ Fault = (*Escape)(nil)

func (f *Escape) Kind() Kind { return KindEscape }

// Target is the supervisor whose command escapes.
func (f *Escape) Target() string { return f.Name }

// Inject signals the command to start its escaping jobs.
func (f *Escape) Inject(ctx context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.active {
		return ErrInjected
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if f.PID <= 1 {
		return fmt.Errorf("%w: Escape.PID %d: want the command's pid", ErrInvalid, f.PID)
	}
	if err := syscall.Kill(f.PID, EscapeSignal); err != nil {
		return fmt.Errorf("%w: command %d: %v", ErrNotRunning, f.PID, err)
	}
	f.active = true
	return nil
}

// Remove is a no-op: the jobs' fate is the supervisor's business.
func (f *Escape) Remove(context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.active = false
	return nil
}
