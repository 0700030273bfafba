package chaos

import (
	"context"
	"fmt"
	"syscall"

	"golang.org/x/sys/unix"
)

// JobStop sends a job-control stop signal to a `blobleader run` supervisor
// alone, as a terminal does on ^Z (SIGTSTP) or on a background read
// (SIGTTIN) or write (SIGTTOU): the command is in a process group of its
// own, so only the supervisor gets it. Its default action stops the
// process; a supervisor must not be stopped by it while its command runs
// on. Remove sends SIGCONT (a no-op for a supervisor that did not stop).
type JobStop struct {
	Signal  string  `json:"signal"` // "SIGTSTP" (default), "SIGTTIN" or "SIGTTOU"
	Process Process `json:"-"`      // the supervisor

	stop signalled
}

var (
	_ Fault         = (*JobStop)(nil)
	_ ProcessTarget = (*JobStop)(nil)
)

func (f *JobStop) SetProcess(p Process) { f.Process = p }

func (f *JobStop) Kind() Kind { return KindJobStop }

// Target is the name of the signalled supervisor.
func (f *JobStop) Target() string { return f.stop.name(f.Process) }

func (f *JobStop) signal() (syscall.Signal, error) {
	switch name := f.Signal; name {
	case "", "SIGTSTP", "SIGTTIN", "SIGTTOU":
		if name == "" {
			name = "SIGTSTP"
		}
		return unix.SignalNum(name), nil
	default:
		return 0, fmt.Errorf("%w: JobStop.Signal %q: want SIGTSTP, SIGTTIN or SIGTTOU", ErrInvalid, name)
	}
}

// Inject delivers the signal. It does not wait for a stop: whether the
// supervisor stops is what the fault shows.
func (f *JobStop) Inject(ctx context.Context) error {
	sig, err := f.signal()
	if err != nil {
		return err
	}
	return f.stop.send(ctx, f.Process, sig, nil)
}

// Remove sends SIGCONT; a supervisor that exited meanwhile counts as
// removed. It counts as removed even when SIGCONT fails.
func (f *JobStop) Remove(ctx context.Context) error {
	return f.stop.cont(ctx, f.Process, true)
}
