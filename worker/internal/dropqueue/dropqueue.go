// Package dropqueue is the bounded queue that never makes its caller wait,
// shared by the binary's logs (worker/boundedlog) and its history file
// (history.Queue): Put enqueues or drops and counts; one goroutine writes the
// items in order, counts a write that fails (a full disk, a pipe with no
// reader) as a drop too, and reports each run of dropped items in the place
// where it is missing. Why: nothing on the safety path (step-down, kill, release) may
// wait on a report of it (docs/architecture.md#logs).
//
// Memory is bounded by the capacity (items, not bytes). An item still queued
// when the process is SIGKILLed is lost; Close waits for the queue to drain
// only as long as its context allows.
package dropqueue

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
)

var (
	// ErrFull is Put's answer when the queue is full: the item was dropped.
	ErrFull = errors.New("dropqueue: full")
	// ErrClosed is Put's answer after Close (the item was dropped), and
	// Close's when called twice.
	ErrClosed = errors.New("dropqueue: closed")
)

// Queue holds items of type T for its one writer goroutine.
type Queue[T any] struct {
	q       chan entry[T]
	dropped atomic.Uint64
	done    chan struct{} // closed when the writer has returned

	mu     sync.RWMutex // held for reading while enqueuing, for writing by Close
	closed bool
}

// entry is one queued item and Dropped when it was queued: the hole, if any,
// is before it.
type entry[T any] struct {
	v             T
	droppedBefore uint64
}

// New starts a queue of capacity items (at least 1) whose goroutine hands
// each item to write, in order (an item write fails to write is lost and
// counted as dropped), and calls hole with the number of items dropped
// since the last report (n) and in all (total) in the place of the hole:
// before the first item queued after the drops, or when the queue runs
// empty.
func New[T any](capacity int, write func(T) error, hole func(n, total uint64)) *Queue[T] {
	q := &Queue[T]{q: make(chan entry[T], max(capacity, 1)), done: make(chan struct{})}
	go q.drain(write, hole)
	return q
}

// Put queues v; it never blocks. A full queue (ErrFull) or a closed one
// (ErrClosed) drops v and counts it.
func (q *Queue[T]) Put(v T) error {
	q.mu.RLock()
	defer q.mu.RUnlock()
	if q.closed {
		q.dropped.Add(1)
		return ErrClosed
	}
	select {
	case q.q <- entry[T]{v: v, droppedBefore: q.dropped.Load()}:
		return nil
	default:
		q.dropped.Add(1)
		return ErrFull
	}
}

// Dropped counts the items lost since New: to a full or closed queue, or to
// a write that failed.
func (q *Queue[T]) Dropped() uint64 { return q.dropped.Load() }

func (q *Queue[T]) drain(write func(T) error, hole func(n, total uint64)) {
	defer close(q.done)
	var reported uint64
	report := func(upTo uint64) {
		if upTo <= reported {
			return
		}
		hole(upTo-reported, upTo)
		reported = upTo
	}
	for e := range q.q {
		report(e.droppedBefore)
		if write(e.v) != nil {
			q.dropped.Add(1)
		}
		if len(q.q) == 0 {
			report(q.dropped.Load())
		}
	}
}

// Close stops accepting items (later ones are dropped and counted) and waits
// until the queued ones are written or ctx ends, whichever is first. When
// ctx ends first it returns how many were still unwritten and ctx's error;
// called twice, ErrClosed.
func (q *Queue[T]) Close(ctx context.Context) (unwritten int, err error) {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return 0, ErrClosed
	}
	q.closed = true
	close(q.q)
	q.mu.Unlock()
	select {
	case <-q.done:
		return 0, nil
	case <-ctx.Done():
		return len(q.q), ctx.Err()
	}
}
