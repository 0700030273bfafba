package chaos

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// OutputPipe is where a local process's stdout and stderr go when its output
// may be blocked (BlockedOutput): a pipe that the harness drains into a
// destination (the worker's log file) until the fault holds it. Give Writer
// to the process (exec.Cmd Stdout/Stderr), call Started once it runs, and
// Close once it has exited.
//
// Padding that BlockedOutput writes to fill the pipe is NUL bytes, which the
// drain drops: JSON and text logs never contain a raw NUL.
type OutputPipe struct {
	name string
	dst  io.Writer
	r, w *os.File
	fill int // a second, non-blocking open file description of the write end

	mu     sync.Mutex
	held   bool
	gone   bool          // the read end is closed (OutputReaderGone)
	parked chan struct{} // closed by the drain once it stopped reading for a hold
	resume chan struct{} // closed to end a hold
	done   chan struct{} // closed when the drain has returned (EOF)
}

// NewOutputPipe makes a pipe named name (the process's, for the timeline)
// drained into dst.
func NewOutputPipe(name string, dst io.Writer) (*OutputPipe, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("chaos: output pipe: %w", err)
	}
	// The process's end must block when the pipe is full, as a real stderr
	// does: Fd puts it in blocking mode. Filling needs writes that fail with
	// EAGAIN instead, on the same pipe: a new open file description of it
	// (O_NONBLOCK belongs to the description, so the process's end stays
	// blocking).
	fill, err := syscall.Open("/proc/self/fd/"+strconv.Itoa(int(w.Fd())), syscall.O_WRONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		r.Close()
		w.Close()
		return nil, fmt.Errorf("chaos: output pipe: reopen the write end non-blocking: %w", err)
	}
	p := &OutputPipe{name: name, dst: dst, r: r, w: w, fill: fill, done: make(chan struct{})}
	go p.drain()
	return p, nil
}

// Name is the process's name.
func (p *OutputPipe) Name() string { return p.name }

// Writer is the end to give the process as its stdout and stderr.
func (p *OutputPipe) Writer() *os.File { return p.w }

// Started closes our copy of the process's end (the process holds its own).
func (p *OutputPipe) Started() error { return p.w.Close() }

// drain copies the pipe into dst, NUL padding dropped, parking while held.
func (p *OutputPipe) drain() {
	defer close(p.done)
	buf := make([]byte, 32<<10)
	for {
		if resume := p.holdPoint(); resume != nil {
			<-resume
			continue
		}
		n, err := p.r.Read(buf)
		if n > 0 {
			if b := bytes.ReplaceAll(buf[:n], []byte{0}, nil); len(b) > 0 {
				_, _ = p.dst.Write(b)
			}
		}
		switch {
		case errors.Is(err, os.ErrDeadlineExceeded): // a hold interrupted the read
		case err != nil: // EOF: every writer is gone
			return
		}
	}
}

// holdPoint parks the drain if a hold is asked: it tells the holder it
// stopped reading and returns the channel that ends the hold.
func (p *OutputPipe) holdPoint() chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.held || p.parked == nil {
		return nil
	}
	close(p.parked)
	p.parked = nil
	return p.resume
}

// hold stops the drain and fills the pipe, so that the process's next write
// blocks; it returns once both are done.
func (p *OutputPipe) hold(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	p.mu.Lock()
	if p.held {
		p.mu.Unlock()
		return ErrInjected
	}
	parked := make(chan struct{})
	p.held, p.parked, p.resume = true, parked, make(chan struct{})
	p.mu.Unlock()
	// Wake a drain blocked in Read; it parks at its next hold point.
	_ = p.r.SetReadDeadline(time.Now())
	select {
	case <-parked:
	case <-p.done:
		p.release()
		return fmt.Errorf("%w: %s's output pipe is closed", ErrNotRunning, p.name)
	case <-ctx.Done():
		p.release()
		return ctx.Err()
	}
	_ = p.r.SetReadDeadline(time.Time{})
	if err := p.fillUp(); err != nil {
		p.release()
		return err
	}
	return nil
}

// fillUp writes NUL padding until the pipe takes no more. Writes of at most
// PIPE_BUF bytes are all or nothing, so stepping the size down to one byte
// leaves the pipe exactly full.
func (p *OutputPipe) fillUp() error {
	pad := make([]byte, 4096)
	for size := len(pad); size > 0; {
		_, err := syscall.Write(p.fill, pad[:size])
		switch {
		case err == nil:
		case errors.Is(err, syscall.EAGAIN):
			size /= 2
		case errors.Is(err, syscall.EINTR):
		default:
			return fmt.Errorf("chaos: fill %s's output pipe: %w", p.name, err)
		}
	}
	return nil
}

// release lets the drain read again (the padding is dropped, the process's
// blocked write completes). A no-op when not held.
func (p *OutputPipe) release() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.held {
		return
	}
	p.held, p.parked = false, nil
	close(p.resume)
	_ = p.r.SetReadDeadline(time.Time{}) // a hold given up before the drain parked
}

// closeReader closes the read end, as when the reader (`| tee`, a log
// shipper, an ssh session) exits: the drain stops, and every later write of
// the process to the pipe fails with EPIPE (and raises SIGPIPE in it). It
// cannot be undone. It returns ErrInjected if the reader is already gone.
func (p *OutputPipe) closeReader() error {
	p.release() // a hold in place: the drain must not park for ever
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.gone {
		return ErrInjected
	}
	p.gone = true
	if p.fill >= 0 {
		// Our own write end would keep the pipe open for nobody.
		_ = syscall.Close(p.fill)
		p.fill = -1
	}
	return p.r.Close() // the drain's Read returns and it ends
}

// Close waits until every writer is gone and everything was drained into
// dst, or ctx ends (a writer that outlived the process, e.g. a command or a
// guard it left running, keeps the pipe open); then it closes the pipe. A
// hold in place is not ended: Close returns at once, a writer that outlived
// the process stays blocked until the fault is removed, as with a log
// reader that stalled for good, and the pipe is closed once the hold has
// ended and every writer is gone.
func (p *OutputPipe) Close(ctx context.Context) error {
	var err error
	p.mu.Lock()
	gone, held := p.gone, p.held
	if p.fill >= 0 {
		err = syscall.Close(p.fill)
		p.fill = -1
	}
	p.mu.Unlock()
	_ = p.w.Close() // if Started was never called
	if held {
		go func() { <-p.done; _ = p.r.Close() }() // once the fault is removed and the writers are gone
		return err
	}
	select {
	case <-p.done:
	case <-ctx.Done():
		go func() { <-p.done; _ = p.r.Close() }() // once the fault is removed and the writers are gone
		return errors.Join(err, fmt.Errorf("chaos: %s's output pipe still has a writer: %w", p.name, ctx.Err()))
	}
	if gone {
		return err
	}
	return errors.Join(err, p.r.Close())
}
