package election

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/blobleader/blobleader/worker/election/lease"
	"github.com/blobleader/blobleader/worker/internal/renewal"
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

// renewResult is one answer of a renew cycle. With early takeover on a
// cycle sends two: the heartbeat's as soon as it is answered (so the belief
// it earns is not held up by the renew behind it), then the renew's, final.
type renewResult struct {
	final    bool      // the cycle is over: no more answers follow
	sent     time.Time // the renew's send; zero in a heartbeat's answer
	err      error     // the renew's error, or a definite loss of either request
	beatSent time.Time // the heartbeat's send, when it landed (takeover.go); zero: none
	beat     int64     // the heartbeat written; 0: none
	beatErr  error     // why the heartbeat write failed, when it did (not a loss)
}

// Final reports whether r is its cycle's last answer (renewal.Answer).
func (r renewResult) Final() bool { return r.final }

// leadership is one term of leading: the task, the renews and the deadline.
// Its methods are the steps of the lead loop and the hooks of its renewal
// machine; only the loop's goroutine calls them.
type leadership struct {
	e       *Elector
	ctx     context.Context // Run's context
	term    int64
	leaseID string

	cancelTask context.CancelFunc
	taskDone   chan struct{}
	taskErr    error // valid after taskDone is closed

	renew *renewal.Machine[renewResult] // the renews under the deadline
	end   ending                        // why a hook (renewed, ticked) ended the leadership
	beats int64                         // heartbeats written (takeover.go); only the renew goroutine in flight touches it

	// The belief's two bounds (docs/failover.md#early-takeover): D after
	// the send of the last successful renew, and — with early takeover
	// on — D after the send of the last heartbeat that landed. Leadership
	// lasts until the earlier of the two.
	renewBound, beatBound time.Time
	extended              bool // the cycle in flight has moved the deadline (renewed is emitted once, at its end)
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

	l := &leadership{e: e, ctx: ctx, term: w.term, leaseID: w.leaseID, taskDone: make(chan struct{}),
		renewBound: w.validUntil, beatBound: w.validUntil}
	l.renew = renewal.New(ctx, renewal.Hooks[renewResult]{
		Deadline: l.deadline, Start: l.startRenew, Apply: l.renewed, Tick: l.ticked,
	}, e.cfg.RenewInterval, e.cfg.RequestTimeout())
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
	if l.e.cfg.takeoverEnabled() {
		// The belief won counts from the acquire's send, and three round
		// trips of it are spent already (acquire, term read, term write):
		// with a short deadline on slow storage, waiting a renew interval
		// for the first heartbeat would let it lapse.
		l.renew.Renew()
	}
	switch l.renew.Run(l.ctx, l.taskDone) {
	case renewal.Stopped:
		// Graceful stop: task first, then release so a follower takes
		// over within one retry period.
		return shutdown()
	case renewal.Done:
		return l.taskEnded()
	case renewal.Lapsed:
		// The renew deadline: no successful renew sent within D, so step
		// down now. The lease may still be ours on the server, so release
		// it best-effort.
		return handOn("renew deadline exceeded")
	}
	return l.end // renewal.Over: renewed or ticked said why
}

// ticked runs at each renew tick, before the renew: the stall watchdog. A
// task that gets no work done under a healthy lease (wedged, or failing
// every step) is the pattern's known failure; give the lease to someone who
// can work.
func (l *leadership) ticked() (over bool) {
	l.e.touch(false)
	if reason := l.e.stalled(); reason != "" {
		l.end = stalled(reason)
		return true
	}
	return false
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

// startRenew sends one renew cycle (with early takeover on, a heartbeat
// and a renew) on its own goroutine, so that a hung request can never keep
// the loop from stepping down at the deadline; its requests end by end.
func (l *leadership) startRenew(ctx context.Context, sent, end time.Time, out chan<- renewResult) {
	go l.renewAndBeat(ctx, sent, end, l.beatDue(sent), out)
}

// renewed applies a renew cycle's answers: a successful renew moves its
// bound to its send time + D, a heartbeat that landed moves its bound to
// its send time + D, and the deadline is the earlier bound (with early
// takeover off, the renew's alone); a definite loss ends the leadership;
// anything else is retried at the next tick.
func (l *leadership) renewed(r renewResult) (over bool) {
	e := l.e
	if r.err != nil && e.cfg.claim.ends(r.err) {
		// A definite loss: someone broke or took the lease, or deleted its
		// blob. Nothing to release.
		l.end = lost("lease lost: " + r.err.Error())
		return true
	}
	renewed := !r.sent.IsZero() && r.err == nil
	if renewed {
		l.renewBound = later(l.renewBound, r.sent.Add(e.cfg.RenewDeadline))
	}
	if !r.beatSent.IsZero() {
		l.beatBound = later(l.beatBound, r.beatSent.Add(e.cfg.RenewDeadline))
	}
	bound := l.renewBound
	if e.cfg.takeoverEnabled() {
		bound = earlier(bound, l.beatBound)
	}
	e.mu.Lock()
	if dl := e.cfg.claim.until(bound); dl.After(e.deadline) {
		e.deadline, e.confirmed, l.extended = dl, bound.Add(-e.cfg.RenewDeadline), true // the send the deadline counts from
	}
	dl := e.deadline
	e.mu.Unlock()
	if renewed || !r.beatSent.IsZero() {
		e.touch(true)
	}
	if r.final && l.extended {
		l.extended = false
		e.emit(Event{Kind: EventRenewed, Term: l.term, ValidUntil: e.cfg.claim.reported(dl), Heartbeat: r.beat})
	}
	if r.beatErr != nil {
		// With early takeover, followers cannot see this cycle: the belief
		// stays where the last landed heartbeat put it. A confirmation that
		// failed extends nothing less (the renew alone carries the belief):
		// the next cycle retries it.
		if e.cfg.takeoverEnabled() {
			e.emit(Event{Kind: EventRenewFailed, Term: l.term, Reason: "heartbeat: " + r.beatErr.Error()})
		}
		e.log.Warn("heartbeat write failed", "term", l.term, "err", r.beatErr)
	}
	if !r.sent.IsZero() && r.err != nil {
		e.emit(Event{Kind: EventRenewFailed, Term: l.term, Reason: r.err.Error()})
		e.log.Warn("renew failed", "term", l.term, "err", r.err)
	}
	return false
}

func earlier(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
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

	l.renew.Stop()
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
