package election

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/blobleader/blobleader/worker/election/lease"
)

// An ending says why a leadership ended and what follows from it.
type ending struct {
	reason     string
	release    bool // the lease may still be ours at storage: give it up
	shutdown   bool // Run is stopping: report RoleStopping
	noProgress bool // the watchdog ended it: the task reported no progress for WatchdogTimeout
}

// handOn ends a leadership on purpose (deadline, watchdog, task exit): the
// lease may still be ours at storage, so release it for a follower.
func handOn(reason string) ending { return ending{reason: reason, release: true} }

// stalled ends a leadership whose task made no progress for the watchdog
// timeout: handed on, and counted towards the backoff (handOffPause).
func stalled(reason string) ending { return ending{reason: reason, release: true, noProgress: true} }

// lost ends a leadership storage has already ended (broken, taken, deleted):
// there is nothing to release.
func lost(reason string) ending { return ending{reason: reason} }

// shutdown ends a leadership because Run's context ended: release, then stop.
func shutdown() ending { return ending{reason: "shutdown", release: true, shutdown: true} }

type renewResult struct {
	sent    time.Time
	err     error
	beat    int64 // the heartbeat written after the renew (takeover.go); 0: none
	beatErr error // why the heartbeat write failed, when it did (not a loss)
}

// leadership is one term of leading: the task, the renews and the deadline.
// Its methods are the steps of the lead loop; only the loop's goroutine
// calls them.
type leadership struct {
	e       *Elector
	ctx     context.Context // Run's context
	term    int64
	leaseID string

	cancelTask context.CancelFunc
	taskDone   chan struct{}
	taskErr    error // valid after taskDone is closed

	renewCtx    context.Context
	cancelRenew context.CancelFunc
	inflight    chan renewResult // nil when no renew is in flight; one at a time
	due         bool             // a tick came while a renew was in flight: renew as soon as it returns
	beats       int64            // heartbeats written (takeover.go); only the renew goroutine in flight touches it
	lastBeat    time.Time        // send of the renew the last heartbeat (or the term write) followed; the same
}

// lead holds the leadership just won until it ends or ctx ends, and says
// how it ended.
func (e *Elector) lead(ctx context.Context, w won) ending {
	now := time.Now()
	deadline := e.cfg.claim.until(w.validUntil)
	e.mu.Lock()
	e.leading, e.ledTerm, e.deadline, e.since, e.lastProgress, e.progressed = true, w.term, deadline, now, now, false
	e.seenBy, e.seenTerm, e.confirmed = e.cfg.Identity, w.term, now
	e.setup = setupWatch{} // we hold the lease: nobody else does
	e.confirm = confirmWatch{}
	e.noteTerm(w.term)
	e.mu.Unlock()
	e.emit(Event{Kind: EventStartedLeading, Term: w.term, Reason: "acquired", ValidUntil: e.cfg.claim.reported(deadline)})
	e.log.Info("started leading", "term", w.term)
	if e.cb.OnNewLeader != nil {
		e.cb.OnNewLeader(e.cfg.Identity, w.term)
	}

	l := &leadership{e: e, ctx: ctx, term: w.term, leaseID: w.leaseID, taskDone: make(chan struct{}), lastBeat: now}
	l.renewCtx, l.cancelRenew = context.WithCancel(ctx)
	defer l.cancelRenew()
	// A pause (GC, SIGSTOP) between the term write and here can outlast the
	// leadership: then the task must not start at all.
	if !time.Now().Before(deadline) {
		close(l.taskDone)
		end := handOn("renew deadline passed before the task started")
		l.stepDown(end)
		return end
	}
	l.startTask()
	end := l.loop()
	l.stepDown(end)
	return end
}

// startTask runs the leader task with a context cancelled at step-down.
func (l *leadership) startTask() {
	var taskCtx context.Context
	taskCtx, l.cancelTask = context.WithCancel(context.WithValue(l.ctx, taskKey{}, taskLeadership{e: l.e, term: l.term}))
	go func() {
		defer close(l.taskDone)
		if l.e.cb.OnStartedLeading == nil {
			<-taskCtx.Done()
			return
		}
		l.taskErr = l.e.cb.OnStartedLeading(taskCtx, l.term)
	}()
}

// loop renews until the leadership ends, and says how it ended.
func (l *leadership) loop() ending {
	e := l.e
	renewTick := time.NewTicker(e.cfg.RenewInterval)
	defer renewTick.Stop()
	deadlineTimer := time.NewTimer(time.Until(l.deadline()))
	defer deadlineTimer.Stop()
	for {
		select {
		case <-l.ctx.Done():
			// Graceful stop: task first, then release so a follower takes
			// over within one retry period.
			return shutdown()

		case <-deadlineTimer.C:
			if dl := l.deadline(); time.Now().Before(dl) { // extended by a renew since the timer was set
				deadlineTimer.Reset(time.Until(dl))
				continue
			}
			// The renew deadline: no successful renew sent within D, so step
			// down now. The lease may still be ours on the server, so
			// release it best-effort.
			return handOn("renew deadline exceeded")

		case <-renewTick.C:
			e.touch(false)
			if reason := e.stalled(); reason != "" {
				// Stall watchdog: a task that gets no work done under a
				// healthy lease (wedged, or failing every step) is the
				// pattern's known failure; give the lease to someone who
				// can work.
				return stalled(reason)
			}
			if l.inflight == nil {
				l.startRenew()
			} else {
				l.due = true
			}

		case r := <-l.inflight:
			l.inflight = nil
			if end, over := l.renewed(r); over {
				return end
			}
			if dl := l.deadline(); r.err == nil {
				deadlineTimer.Reset(time.Until(dl))
			}
			if l.due {
				l.startRenew()
			}

		case <-l.taskDone:
			return l.taskEnded()
		}
	}
}

// taskEnded is how a leadership whose task returned ends: handed on (a
// leader that no longer does its job lets another do it), as a stall when
// the task said it made no progress (ErrNoProgress), or, if Run is
// stopping, shut down.
func (l *leadership) taskEnded() ending {
	if l.ctx.Err() != nil {
		return shutdown()
	}
	reason := "task exited"
	if l.taskErr != nil {
		reason += ": " + l.taskErr.Error()
	}
	if errors.Is(l.taskErr, ErrNoProgress) {
		return stalled(reason)
	}
	return handOn(reason)
}

func (l *leadership) deadline() time.Time {
	l.e.mu.Lock()
	defer l.e.mu.Unlock()
	return l.e.deadline
}

// startRenew sends one renew on its own goroutine, so that a hung request can
// never keep the loop from stepping down at the deadline.
func (l *leadership) startRenew() {
	e := l.e
	l.due = false
	ch := make(chan renewResult, 1)
	l.inflight = ch
	sent := time.Now()
	// The request may not outlive the leadership it is trying to extend.
	end := sent.Add(e.cfg.RequestTimeout())
	if dl := l.deadline(); dl.Before(end) {
		end = dl
	}
	go func() {
		c, cancel := context.WithDeadline(l.renewCtx, end)
		defer cancel()
		ch <- l.renewAndBeat(c, sent)
	}()
}

// renewed applies a renew's answer: a success moves the deadline to its send
// time + D; a definite loss ends the leadership; anything else is retried at
// the next tick.
func (l *leadership) renewed(r renewResult) (ending, bool) {
	e := l.e
	switch {
	case r.err == nil:
		e.touch(true)
		e.mu.Lock()
		if dl := e.cfg.claim.until(r.sent.Add(e.cfg.RenewDeadline)); dl.After(e.deadline) {
			e.deadline, e.confirmed = dl, r.sent
		}
		dl := e.deadline
		e.mu.Unlock()
		e.emit(Event{Kind: EventRenewed, Term: l.term, ValidUntil: e.cfg.claim.reported(dl), Heartbeat: r.beat})
		if r.beatErr != nil {
			e.log.Warn("heartbeat write failed", "term", l.term, "err", r.beatErr)
		}
	case e.cfg.claim.ends(r.err):
		// A definite loss: someone broke or took the lease, or deleted its
		// blob. Nothing to release.
		return lost("lease lost: " + r.err.Error()), true
	default:
		e.emit(Event{Kind: EventRenewFailed, Term: l.term, Reason: r.err.Error()})
		e.log.Warn("renew failed", "term", l.term, "err", r.err)
	}
	return ending{}, false
}

// stepDown ends the leadership. The order is the safety argument: leadership
// stops being reported and the task's context is cancelled first, at once;
// only then is the in-flight renew drained (so Lock calls stay sequential),
// the task awaited (bounded), the callbacks and events delivered, and — if
// the ending asks — the lease released with this leadership's own lease ID,
// so a release that arrives late can never free a later leadership's lease.
func (l *leadership) stepDown(end ending) {
	e := l.e
	e.mu.Lock()
	validUntil := e.deadline
	e.leading, e.stopping, e.seenBy, e.since = false, end.shutdown, "", time.Now()
	e.mu.Unlock()
	if l.cancelTask != nil {
		l.cancelTask()
	}

	l.cancelRenew()
	if l.inflight != nil {
		select {
		case <-l.inflight:
		case <-time.After(e.cfg.RequestTimeout()):
		}
	}
	l.awaitTask(end.reason)

	if end.noProgress {
		e.mu.Lock()
		e.stallsTotal++
		e.mu.Unlock()
	}
	e.emit(Event{Kind: EventStoppedLeading, Term: l.term, Reason: end.reason, ValidUntil: e.cfg.claim.reported(validUntil)})
	e.log.Info("stopped leading", "term", l.term, "reason", end.reason)
	if e.cb.OnStoppedLeading != nil {
		e.cb.OnStoppedLeading(end.reason)
	}
	if end.release {
		l.release(end.reason)
	}
}

// awaitTask waits up to ShutdownGrace for the cancelled task; a task that
// does not return makes Healthy fail until it does.
func (l *leadership) awaitTask(reason string) {
	e := l.e
	select {
	case <-l.taskDone:
		return
	case <-time.After(e.cfg.ShutdownGrace):
	}
	msg := fmt.Sprintf("leader task of term %d did not return within %s of being cancelled (%s)", l.term, e.cfg.ShutdownGrace, reason)
	e.log.Error(msg)
	e.mu.Lock()
	e.wedged = msg
	e.mu.Unlock()
	go func() {
		<-l.taskDone
		e.mu.Lock()
		e.wedged = ""
		e.mu.Unlock()
	}()
}

// release gives the lease up on a fresh, bounded context (Run's may be
// cancelled), as this leadership's lease ID.
//
// A transient failure (a timeout, a 5xx) is retried, up to releaseAttempts
// calls in all: the same lease ID can only ever free this leadership's lease,
// so a retry is safe, and without it one failed request leaves the lease to
// expire — a whole LeaseDuration without a leader. A definite answer (the
// lease is gone or another's) ends the attempts.
func (l *leadership) release(reason string) {
	e := l.e
	var err error
	for attempt := 1; attempt <= releaseAttempts; attempt++ {
		err = e.call(context.WithoutCancel(l.ctx), func(c context.Context) error { return e.lock.Release(c, l.leaseID) })
		if err == nil || errors.Is(err, lease.ErrLost) || errors.Is(err, lease.ErrHeld) || errors.Is(err, lease.ErrRejected) {
			break
		}
		if attempt < releaseAttempts {
			time.Sleep(releaseRetryPause)
		}
	}
	if err != nil {
		e.log.Warn("release failed; the lease will expire on its own", "term", l.term, "err", err)
		return
	}
	e.emit(Event{Kind: EventReleased, Term: l.term, Reason: reason})
}

// releaseAttempts and releaseRetryPause bound a release: at most three
// request timeouts plus 0.2s.
const (
	releaseAttempts   = 3
	releaseRetryPause = 100 * time.Millisecond
)
