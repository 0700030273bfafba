// Package boundedlog is a slog.Handler that never makes its caller wait on
// the output: records go into a bounded queue that one goroutine drains into
// the real handler; when the queue is full the record is dropped and counted.
//
// Why: the election loop, the supervisor's lapse timer and every other step
// on the safety path log. A log write is I/O whose latency we do not control
// (a stderr pipe nobody drains, a stalled container log driver, a full disk
// behind a terminal multiplexer). A step-down, a kill or a release must never
// wait on it: act first, report after (docs/architecture.md#logs).
//
// Guarantees:
//   - Handle never blocks and never fails: it enqueues or drops.
//   - Records keep their own time (set when logged, not when written) and
//     their order; the drainer writes them one at a time.
//   - Every dropped record is counted (Dropped). When the output moves again,
//     the drainer writes one warning saying how many records were lost.
//   - Memory is bounded by the queue's capacity (records, not bytes).
//
// Non-guarantees: a record still queued when the process is SIGKILLed is lost;
// Close waits for the queue to drain only as long as its context allows, so a
// stuck output loses what is queued at exit (and says so in its error).
package boundedlog

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/blobleader/blobleader/worker/internal/dropqueue"
)

// DefaultCapacity is the queue's capacity in records when Options leaves it 0.
// 4096 records is several minutes of a busy worker's logs; a blocked output
// loses the rest, counted.
const DefaultCapacity = 4096

// ErrClosed is returned by Close when called twice.
var ErrClosed = errors.New("boundedlog: already closed")

// Options tune a Sink; zero values take defaults.
type Options struct {
	Capacity int // records the queue holds; default DefaultCapacity
}

// item is one queued record with the handler (the real one, with the attrs
// and groups of the logger that made it) it is for.
type item struct {
	h slog.Handler
	r slog.Record
}

// Sink owns the queue and the goroutine that drains it into the real handler.
// Its Handler is what loggers use.
type Sink struct {
	out slog.Handler
	q   *dropqueue.Queue[item]
}

// New starts a sink draining into out. Close it to flush and stop.
func New(out slog.Handler, opts Options) *Sink {
	c := opts.Capacity
	if c <= 0 {
		c = DefaultCapacity
	}
	s := &Sink{out: out}
	s.q = dropqueue.New(c, s.write, s.notice)
	return s
}

// Handler is the non-blocking handler in front of out.
func (s *Sink) Handler() slog.Handler { return &handler{s: s, h: s.out} }

// Dropped is how many records were lost since the sink started: dropped
// because the queue was full (or the sink closed), or written to an output
// that failed.
func (s *Sink) Dropped() uint64 { return s.q.Dropped() }

// write is the drainer's write of one record, in order; a record whose
// write failed (a full disk, a pipe with no reader) is counted as dropped.
func (s *Sink) write(it item) error {
	return it.h.Handle(context.Background(), it.r)
}

// notice is the one warning the drainer writes in the place of n dropped
// records.
func (s *Sink) notice(n, total uint64) {
	r := slog.NewRecord(time.Now(), slog.LevelWarn, "log records dropped: the log output was blocked or too slow", 0)
	r.AddAttrs(slog.Uint64("dropped", n), slog.Uint64("dropped_total", total))
	_ = s.out.Handle(context.Background(), r)
}

// Close stops accepting records (later ones are dropped and counted) and
// waits until the queued ones are written or ctx ends, whichever is first.
func (s *Sink) Close(ctx context.Context) error {
	n, err := s.q.Close(ctx)
	switch {
	case errors.Is(err, dropqueue.ErrClosed):
		return ErrClosed
	case err != nil:
		return fmt.Errorf("boundedlog: %d records not written at close (output blocked): %w", n, err)
	}
	return nil
}

// handler is a Sink's slog.Handler; WithAttrs and WithGroup derive the real
// handler (pure computation, no output) and keep the same queue.
type handler struct {
	s *Sink
	h slog.Handler
}

func (h *handler) Enabled(ctx context.Context, l slog.Level) bool { return h.h.Enabled(ctx, l) }

// Handle queues a copy of r (the caller may reuse r's attribute storage).
func (h *handler) Handle(_ context.Context, r slog.Record) error {
	_ = h.s.q.Put(item{h: h.h, r: r.Clone()}) // never blocks: queued, or dropped and counted
	return nil
}

func (h *handler) WithAttrs(as []slog.Attr) slog.Handler {
	return &handler{s: h.s, h: h.h.WithAttrs(as)}
}

func (h *handler) WithGroup(name string) slog.Handler {
	return &handler{s: h.s, h: h.h.WithGroup(name)}
}
