package chaos

import (
	"context"
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

	sig commandSignal
}

var _ Fault = (*Escape)(nil)

func (f *Escape) Kind() Kind { return KindEscape }

// Target is the supervisor whose command escapes.
func (f *Escape) Target() string { return f.Name }

// Inject signals the command to start its escaping jobs.
func (f *Escape) Inject(ctx context.Context) error {
	return f.sig.send(ctx, "Escape", f.PID, EscapeSignal)
}

// Remove is a no-op: the jobs' fate is the supervisor's business.
func (f *Escape) Remove(context.Context) error {
	f.sig.forget()
	return nil
}
