package history

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
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
	out     Writer
	q       chan queued
	dropped atomic.Uint64
	done    chan struct{}
	failed  func(error) // told a failed write of the sink; may be nil

	identity string
	start    time.Time

	mu     sync.RWMutex
	closed bool
}

type queued struct {
	r             Record
	droppedBefore uint64
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
	q := &Queue{out: out, q: make(chan queued, c), done: make(chan struct{}), failed: opts.OnError, identity: opts.Identity, start: opts.Start}
	go q.drain()
	return q
}

// Write queues r; it never blocks. A full queue (or a closed one) drops r and
// counts it.
func (q *Queue) Write(r Record) error {
	q.mu.RLock()
	defer q.mu.RUnlock()
	if q.closed {
		q.dropped.Add(1)
		return errQueueClosed
	}
	select {
	case q.q <- queued{r: r, droppedBefore: q.dropped.Load()}:
		return nil
	default:
		q.dropped.Add(1)
		return errQueueFull
	}
}

var (
	errQueueFull   = errors.New("history: queue full (the history sink is blocked or too slow); record dropped")
	errQueueClosed = errors.New("history: queue closed; record dropped")
)

// Dropped counts the records lost to a full or closed queue.
func (q *Queue) Dropped() uint64 { return q.dropped.Load() }

func (q *Queue) drain() {
	defer close(q.done)
	var reported uint64
	hole := func(upTo uint64) {
		if upTo <= reported {
			return
		}
		now := time.Now()
		q.write(Record{T: now.UTC().Format(time.RFC3339Nano), MonoNS: int64(now.Sub(q.start)), Identity: q.identity,
			Event: EventDropped, Dropped: int64(upTo - reported), Reason: "history queue full: the history sink was blocked or too slow"})
		reported = upTo
	}
	for it := range q.q {
		hole(it.droppedBefore)
		q.write(it.r)
		if len(q.q) == 0 {
			hole(q.dropped.Load())
		}
	}
}

func (q *Queue) write(r Record) {
	if err := q.out.Write(r); err != nil && q.failed != nil {
		q.failed(err)
	}
}

// Close stops accepting records and waits until the queued ones are written
// or ctx ends. It does not close the sink.
func (q *Queue) Close(ctx context.Context) error {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return nil
	}
	q.closed = true
	close(q.q)
	q.mu.Unlock()
	select {
	case <-q.done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("history: %d records not written at close (sink blocked): %w", len(q.q), ctx.Err())
	}
}
