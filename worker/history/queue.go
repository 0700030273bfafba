package history

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/blobleader/blobleader/worker/internal/dropqueue"
)

// Writer is a history sink: File, Blob, or a Queue in front of one.
type Writer interface {
	Write(Record) error
}

// DefaultQueueCapacity is a Queue's capacity in records when 0 is given: a
// renewing leader writes about one record a second, so minutes of history.
const DefaultQueueCapacity = 4096

// Queue puts a bounded queue in front of a sink whose Write can block (a
// File on a stuck disk or a FIFO nobody reads): Write never waits, one
// goroutine writes the records in order. History is evidence, but it is
// reported after the act, never before it: a step-down, a kill or a release
// must not wait on it (docs/architecture.md#logs).
//
// In the normal case every record is written, in order, a moment after
// Write. When the queue is full a record is dropped and counted (Dropped);
// once the sink accepts writes again, a history_dropped record with the count
// is written where the hole is, so a reader knows the history has one. A
// record still queued when the process is SIGKILLed is lost.
type Queue struct {
	out    Writer
	q      *dropqueue.Queue[Record]
	failed func(error) // told a failed write of the sink; may be nil

	identity string
	start    time.Time
}

// QueueOptions tune a Queue; zero values take defaults.
type QueueOptions struct {
	Capacity int // records; default DefaultQueueCapacity
	// OnError is told each failed write of the sink (from the queue's
	// goroutine); nil ignores them.
	OnError func(error)
	// Identity and Start fill the history_dropped records.
	Identity string
	Start    time.Time
}

// NewQueue starts a queue writing into out.
func NewQueue(out Writer, opts QueueOptions) *Queue {
	c := opts.Capacity
	if c <= 0 {
		c = DefaultQueueCapacity
	}
	q := &Queue{out: out, failed: opts.OnError, identity: opts.Identity, start: opts.Start}
	q.q = dropqueue.New(c, q.write, q.hole)
	return q
}

// Write queues r; it never blocks. A full queue (or a closed one) drops r and
// counts it.
func (q *Queue) Write(r Record) error {
	switch err := q.q.Put(r); {
	case errors.Is(err, dropqueue.ErrClosed):
		return errQueueClosed
	case err != nil:
		return errQueueFull
	}
	return nil
}

var (
	errQueueFull   = errors.New("history: queue full (the history sink is blocked or too slow); record dropped")
	errQueueClosed = errors.New("history: queue closed; record dropped")
)

// Dropped counts the records lost: to a full or closed queue, or to a write
// the sink refused (a full disk).
func (q *Queue) Dropped() uint64 { return q.q.Dropped() }

// hole is the history_dropped record written in the place of n dropped
// records, so a reader knows the history has a hole there.
func (q *Queue) hole(n, _ uint64) {
	now := time.Now()
	q.write(Record{T: now.UTC().Format(time.RFC3339Nano), MonoNS: int64(now.Sub(q.start)), Identity: q.identity,
		Event: EventDropped, Dropped: int64(n), Reason: "history queue full: the history sink was blocked or too slow"})
}

func (q *Queue) write(r Record) error {
	err := q.out.Write(r)
	if err != nil && q.failed != nil {
		q.failed(err)
	}
	return err
}

// Close stops accepting records and waits until the queued ones are written
// or ctx ends. It does not close the sink.
func (q *Queue) Close(ctx context.Context) error {
	n, err := q.q.Close(ctx)
	switch {
	case errors.Is(err, dropqueue.ErrClosed):
		return nil
	case err != nil:
		return fmt.Errorf("history: %d records not written at close (sink blocked): %w", n, err)
	}
	return nil
}
