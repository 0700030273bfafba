package election

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// What a leader task sees of its leadership (docs/architecture.md#the-election,
// the stall watchdog): the context passed to OnStartedLeading carries the
// leadership it runs for, so the task can ask whether that leadership still
// holds (Leading) and report the work it got done (Progress).

// taskKey carries a leader task's leadership in the task's context.
type taskKey struct{}

// taskLeadership is the leadership a leader task runs for.
type taskLeadership struct {
	e    *Elector
	term int64
}

// Leading reports whether the leadership a leader task runs for (its ctx is
// the one passed to OnStartedLeading, or derived from it) holds right now,
// checked against the renew deadline at the moment of asking: a task skips a
// side effect the moment leadership lapses, even before its context is
// cancelled. It is false for any other context, and for a task whose
// leadership ended even if the elector leads again under a later term.
func Leading(ctx context.Context) bool {
	l, ok := ctx.Value(taskKey{}).(taskLeadership)
	if !ok {
		return false
	}
	l.e.mu.Lock()
	defer l.e.mu.Unlock()
	return l.e.ledTerm == l.term && l.e.isLeaderLocked(time.Now())
}

// Progress reports, for the stall watchdog, that the leader task whose
// context is ctx (the one passed to OnStartedLeading) got work done: work
// that landed (an append storage accepted, a document published), not a
// loop that turned. A leader whose task reports none for WatchdogTimeout
// steps down, and backs off before it contends again. Progress does nothing
// for other contexts, nor for a task whose leadership has ended: it never
// counts for a later leadership.
func Progress(ctx context.Context) {
	if l, ok := ctx.Value(taskKey{}).(taskLeadership); ok {
		l.e.mu.Lock()
		defer l.e.mu.Unlock()
		if l.e.leading && l.e.ledTerm == l.term {
			l.e.lastProgress, l.e.progressed = time.Now(), true
		}
	}
}

// ErrNoProgress, returned (wrapped) by a leader task that ends by itself,
// says that its leadership got no work done: the elector hands on as its
// stall watchdog would, so the leadership counts towards the backoff before
// it contends again (and in NoProgressStepDowns), unless the task reported
// Progress in it. `blobleader run` returns it for a command that ended
// before it had run for a look at it: a command that exits at once backs
// off instead of restarting for ever.
var ErrNoProgress = errors.New("election: the leader task made no progress")

// stalled is the watchdog's reason to end the leadership: the task reported
// no progress for WatchdogTimeout; "" otherwise (or with the watchdog off).
func (e *Elector) stalled() string {
	if e.cfg.WatchdogTimeout <= 0 {
		return ""
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if idle := time.Since(e.lastProgress); idle > e.cfg.WatchdogTimeout {
		return fmt.Sprintf("watchdog: no progress for %s", idle.Round(time.Millisecond))
	}
	return ""
}

// NoProgressStepDowns counts the leaderships that ended without progress:
// the stall watchdog's (no progress for WatchdogTimeout) and those whose
// task returned ErrNoProgress.
func (e *Elector) NoProgressStepDowns() int64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.stallsTotal
}
