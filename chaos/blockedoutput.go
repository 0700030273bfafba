package chaos

import (
	"context"
)

// BlockedOutput makes a process's stdout and stderr a full pipe that nobody
// reads — a container runtime's blocking log mode with a stalled driver, a
// terminal multiplexer that stopped reading. The process's next write to
// either blocks in write(2) until Remove drains the pipe again. A process
// that logs on its safety path (step-down, kill, release) stops there.
//
// The process must have been started with the pipe's Writer as its output
// (an OutputPipe).
type BlockedOutput struct {
	Pipe *OutputPipe `json:"-"`

	place
}

var _ Fault = (*BlockedOutput)(nil)

func (f *BlockedOutput) Kind() Kind { return KindBlockedOutput }

// Target is the name of the process whose output is blocked.
func (f *BlockedOutput) Target() string {
	if f.Pipe == nil {
		return ""
	}
	return f.Pipe.Name()
}

// Inject stops draining the pipe and fills it; it returns once the pipe is
// full, so the process's next write blocks.
func (f *BlockedOutput) Inject(ctx context.Context) error {
	return f.putIn("", func() error {
		if f.Pipe == nil {
			return ErrNoTarget
		}
		return f.Pipe.hold(ctx)
	})
}

// Remove drains the pipe again: the blocked write completes and the output
// written meanwhile reaches its destination (the padding does not).
func (f *BlockedOutput) Remove(ctx context.Context) error {
	return f.takeOut(func() error {
		if err := ctx.Err(); err != nil {
			return err
		}
		f.Pipe.release()
		return nil
	})
}
