package chaos

import (
	"context"
)

// OutputReaderGone makes the reader of a process's stdout and stderr go
// away: the process writes to a pipe (`| tee`, `| logger`, an ssh session, a
// log shipper, a process manager) and its reader exits. Every later write of
// the process to either stream fails with EPIPE and raises SIGPIPE in it,
// whose default action ends the process (exit 141 in a shell). A process on
// the safety path that dies of its own log line, or of its guard's, leaves
// what it guards to nobody.
//
// A pipe whose reader is gone cannot be read again, so Remove does not give
// the process its output back: the fault lasts until the process exits (its
// next incarnation gets a new pipe). The process must have been started with
// the pipe's Writer as its output (an OutputPipe).
type OutputReaderGone struct {
	Pipe *OutputPipe `json:"-"`

	place
}

var _ Fault = (*OutputReaderGone)(nil)

func (f *OutputReaderGone) Kind() Kind { return KindOutputReaderGone }

// Target is the name of the process whose output reader is gone.
func (f *OutputReaderGone) Target() string {
	if f.Pipe == nil {
		return ""
	}
	return f.Pipe.Name()
}

// Inject closes the pipe's read end; it returns once the next write of the
// process fails.
func (f *OutputReaderGone) Inject(ctx context.Context) error {
	return f.putIn("", func() error {
		if f.Pipe == nil {
			return ErrNoTarget
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		return f.Pipe.closeReader()
	})
}

// Remove forgets the fault; the reader stays gone (see the type's doc).
func (f *OutputReaderGone) Remove(ctx context.Context) error {
	_ = f.takeOut(nil) // the reader stays gone
	return ctx.Err()
}
