package election

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"
)

// ErrAlreadyRunning is returned by Run when the elector is already running.
var ErrAlreadyRunning = errors.New("election: elector already running")

// Role is what an elector is doing at the moment of asking.
type Role string

const (
	RoleLeader   Role = "leader"
	RoleFollower Role = "follower"
	RoleStopping Role = "stopping"
)

// EventKind names an election event; the values are the history contract's.
type EventKind string

const (
	EventStartedLeading EventKind = "started_leading"
	EventRenewed        EventKind = "renewed"
	EventStoppedLeading EventKind = "stopped_leading"
	EventObservedLeader EventKind = "observed_leader"
	EventRenewFailed    EventKind = "renew_failed"
	EventAcquireFailed  EventKind = "acquire_failed"
	EventReleased       EventKind = "released"
)

// Event is one thing that happened, for history and metrics.
type Event struct {
	Kind   EventKind
	Time   time.Time // when it happened (carries the monotonic reading)
	Term   int64
	Reason string
	Leader string // observed_leader: who leads
	// ValidUntil is the end of our leadership as known at this event
	// (started_leading, renewed, stopped_leading); zero when unbounded
	// (UnsafeNoStepDown) or not applicable.
	ValidUntil time.Time
}

// Callbacks connect the election to the service. All are optional.
type Callbacks struct {
	// OnStartedLeading is the leader task. It runs in its own goroutine with a
	// context that is cancelled the moment leadership ends, and gets the
	// fencing term: every side effect should carry it. It should run until
	// ctx is cancelled; if it returns, the elector steps down and releases
	// the lease (a leader that no longer does its job lets another do it).
	OnStartedLeading func(ctx context.Context, term int64) error
	// OnStoppedLeading is called after the task has returned (or the grace
	// period ran out), with the reason leadership ended.
	OnStoppedLeading func(reason string)
	// OnNewLeader is called when the known leader or term changes, including
	// when we become leader.
	OnNewLeader func(identity string, term int64)
	// OnEvent receives every Event, synchronously: it must not block.
	OnEvent func(Event)
}

// Status is a snapshot of the elector, with the role computed against the
// renew deadline at the moment of asking.
type Status struct {
	Identity   string
	Role       Role
	Term       int64     // the term we lead, or the last term observed
	Leader     string    // the known leader's identity; empty if unknown
	Since      time.Time // when the current role began
	ValidUntil time.Time // while leading: when leadership lapses without a renew
}

// Elector runs one contender's side of the election. Create it with
// NewElector, then call Run.
type Elector struct {
	cfg  Config
	lock Lock
	cb   Callbacks
	log  *slog.Logger

	mu        sync.Mutex
	running   bool
	leading   bool
	stopping  bool
	term      int64
	leader    string
	deadline  time.Time // leadership valid until (monotonic); meaningful while leading
	since     time.Time
	lastLoop  time.Time // last progress of the election loop
	lastReply time.Time // last definite answer from storage
	beat      time.Time // last task heartbeat
	wedged    string    // non-empty while a cancelled task has not returned
}

// NewElector validates cfg and returns an elector on lock.
func NewElector(cfg Config, lock Lock, cb Callbacks) (*Elector, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if lock == nil {
		return nil, fmt.Errorf("%w: lock is nil", ErrInvalidConfig)
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	now := time.Now()
	return &Elector{cfg: cfg, lock: lock, cb: cb, since: now, lastLoop: now,
		log: log.With("identity", cfg.Identity, "lock", lock.Describe())}, nil
}

// Config returns the elector's configuration.
func (e *Elector) Config() Config { return e.cfg }

// IsLeader reports whether we lead right now: leadership is checked against
// the renew deadline at the moment of asking, so a process resumed after a
// pause never claims a leadership that has already lapsed.
func (e *Elector) IsLeader() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.isLeaderLocked(time.Now())
}

func (e *Elector) isLeaderLocked(now time.Time) bool {
	return e.leading && (e.cfg.unsafeNoStepDown || now.Before(e.deadline))
}

// Status returns a snapshot; see Status.
func (e *Elector) Status() Status {
	e.mu.Lock()
	defer e.mu.Unlock()
	now := time.Now()
	s := Status{Identity: e.cfg.Identity, Role: RoleFollower, Term: e.term, Leader: e.leader, Since: e.since}
	switch {
	case e.stopping:
		s.Role = RoleStopping
	case e.isLeaderLocked(now):
		s.Role = RoleLeader
		if !e.cfg.unsafeNoStepDown {
			s.ValidUntil = e.deadline
		}
	case e.leading:
		// The deadline passed and the loop has not noticed yet (paused, or a
		// renew still hanging): we do not lead and cannot know who does.
		s.Leader, s.Since = "", e.deadline
	}
	return s
}

// Heartbeat records progress of the leader task for the stall watchdog.
// Tasks can also call the package-level Heartbeat(ctx).
func (e *Elector) Heartbeat() {
	e.mu.Lock()
	e.beat = time.Now()
	e.mu.Unlock()
}

type heartbeatKey struct{}

// Heartbeat records progress of the leader task whose context is ctx (the
// one passed to OnStartedLeading). It does nothing for other contexts.
func Heartbeat(ctx context.Context) {
	if e, ok := ctx.Value(heartbeatKey{}).(*Elector); ok {
		e.Heartbeat()
	}
}

// Healthy returns nil unless the election loop or a leading task is wedged.
func (e *Elector) Healthy() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.wedged != "" {
		return errors.New(e.wedged)
	}
	// The loop touches lastLoop at least every max(P, renew interval) plus one
	// request timeout; a full lease duration without progress means it is stuck.
	if e.running && time.Since(e.lastLoop) > e.cfg.LeaseDuration {
		return fmt.Errorf("election loop made no progress for %s", time.Since(e.lastLoop).Round(time.Millisecond))
	}
	return nil
}

// Ready reports whether the elector is running and has had a definite answer
// from storage within the last lease duration.
func (e *Elector) Ready() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	switch {
	case !e.running:
		return errors.New("election loop not running")
	case e.lastReply.IsZero():
		return errors.New("no answer from storage yet")
	case time.Since(e.lastReply) > e.cfg.LeaseDuration:
		return fmt.Errorf("no answer from storage for %s", time.Since(e.lastReply).Round(time.Millisecond))
	}
	return nil
}

func (e *Elector) emit(ev Event) {
	if ev.Time.IsZero() {
		ev.Time = time.Now()
	}
	if e.cb.OnEvent != nil {
		e.cb.OnEvent(ev)
	}
}

func (e *Elector) touch(reply bool) {
	e.mu.Lock()
	now := time.Now()
	e.lastLoop = now
	if reply {
		e.lastReply = now
	}
	e.mu.Unlock()
}

// call runs one storage operation with the request timeout.
func (e *Elector) call(ctx context.Context, op func(context.Context) error) error {
	rctx, cancel := context.WithTimeout(ctx, e.cfg.RequestTimeout())
	defer cancel()
	return op(rctx)
}

// Run takes part in the election until ctx is cancelled. A follower contends
// for ever (transient storage errors never end the loop); a leader leads until
// it steps down and then contends again. On cancel a leader stops its task
// and releases the lease. Run returns nil after a clean stop.
func (e *Elector) Run(ctx context.Context) error {
	e.mu.Lock()
	if e.running {
		e.mu.Unlock()
		return ErrAlreadyRunning
	}
	e.running, e.stopping, e.lastLoop = true, false, time.Now()
	e.mu.Unlock()
	defer func() {
		e.mu.Lock()
		e.running = false
		e.mu.Unlock()
	}()
	var pause time.Duration // before the first acquire attempt
	for {
		term, validUntil, ok := e.follow(ctx, pause)
		if !ok {
			e.mu.Lock()
			e.stopping = true
			e.mu.Unlock()
			return nil
		}
		handedOn := e.lead(ctx, term, validUntil)
		if ctx.Err() != nil {
			return nil
		}
		// After giving the lease up on purpose (watchdog, task exit, deadline)
		// let the other contenders poll first: without the pause we would win
		// our own lease straight back, and a task that exits at once would
		// spin. Followers poll within P·1.1, so 2·P leaves them the field.
		pause = 0
		if handedOn {
			pause = 2 * jitter(e.cfg.RetryPeriod)
		}
	}
}

// follow polls for the lease every P (jittered) until it wins it, and returns
// the new term and the end of the leadership; ok is false when ctx ended.
func (e *Elector) follow(ctx context.Context, pause time.Duration) (term int64, validUntil time.Time, ok bool) {
	heldPolls := 0 // consecutive polls that found the lock held
	timer := time.NewTimer(pause)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return 0, time.Time{}, false
		case <-timer.C:
		}

		// 1. Try to take the lease. The send time bounds the lease from below:
		// storage grants it at or after `sent`, so it lasts past sent + L.
		sent := time.Now()
		err := e.call(ctx, func(c context.Context) error { return e.lock.Acquire(c, e.cfg.LeaseDuration) })
		switch {
		case ctx.Err() != nil:
			if err == nil { // won just as we stop: do not make others wait L
				_ = e.call(context.WithoutCancel(ctx), e.lock.Release)
			}
			return 0, time.Time{}, false
		case err == nil:
			e.touch(true)
			// 2. Become leader: stamp term+1 under the lease (the fencing token).
			term, err := e.stampTerm(ctx, sent)
			if err == nil {
				return term, sent.Add(e.cfg.RenewDeadline), true
			}
			e.emit(Event{Kind: EventAcquireFailed, Reason: "term write: " + err.Error()})
			e.log.Warn("acquired the lease but could not write the term; releasing", "err", err)
			if !errors.Is(err, ErrLockLost) {
				_ = e.call(context.WithoutCancel(ctx), e.lock.Release)
			}
			heldPolls = 0
		case errors.Is(err, ErrLockHeld):
			e.touch(true)
			// Someone leads. Read who (not every poll: it costs an operation),
			// but every poll while we know nobody: the winner may not have
			// stamped its term yet when we first look.
			if heldPolls%e.cfg.ObserveEvery == 0 || e.knownLeader() == "" {
				e.observe(ctx)
			}
			heldPolls++
		default:
			e.touch(false)
			e.emit(Event{Kind: EventAcquireFailed, Reason: err.Error()})
			e.log.Debug("acquire failed (transient)", "err", err)
			heldPolls = 0
		}
		timer.Reset(jitter(e.cfg.RetryPeriod))
	}
}

// jitter spreads followers' polls by ±10% so they do not hit storage in step.
func jitter(p time.Duration) time.Duration {
	return time.Duration(float64(p) * (0.9 + 0.2*rand.Float64()))
}

func (e *Elector) stampTerm(ctx context.Context, sent time.Time) (int64, error) {
	var rec Record
	if err := e.call(ctx, func(c context.Context) (err error) { rec, err = e.lock.Get(c); return err }); err != nil {
		return 0, err
	}
	next := Record{Holder: e.cfg.Identity, Term: rec.Term + 1, Acquired: time.Now().UTC()}
	if err := e.call(ctx, func(c context.Context) error { return e.lock.Update(c, next) }); err != nil {
		return 0, err
	}
	// Slow storage can eat the whole deadline before we start; then we have
	// nothing left to lead with.
	if !time.Now().Before(sent.Add(e.cfg.RenewDeadline)) {
		return 0, errors.New("renew deadline passed while acquiring")
	}
	return next.Term, nil
}

func (e *Elector) knownLeader() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.leader
}

func (e *Elector) observe(ctx context.Context) {
	var rec Record
	err := e.call(ctx, func(c context.Context) (err error) { rec, err = e.lock.Get(c); return err })
	if err != nil {
		e.log.Debug("could not read the leader record", "err", err)
		return
	}
	e.mu.Lock()
	changed := rec.Holder != e.leader || rec.Term != e.term
	if changed {
		e.leader, e.term = rec.Holder, rec.Term
	}
	e.mu.Unlock()
	if changed {
		e.emit(Event{Kind: EventObservedLeader, Term: rec.Term, Leader: rec.Holder})
		e.log.Info("observed leader", "leader", rec.Holder, "term", rec.Term)
		if e.cb.OnNewLeader != nil {
			e.cb.OnNewLeader(rec.Holder, rec.Term)
		}
	}
}

type renewResult struct {
	sent time.Time
	err  error
}

// lead holds leadership of term until it steps down or ctx ends. It reports
// whether it gave the lease up on purpose (and so should not race to win it
// straight back).
func (e *Elector) lead(ctx context.Context, term int64, validUntil time.Time) (handedOn bool) {
	now := time.Now()
	e.mu.Lock()
	e.leading, e.term, e.leader, e.deadline, e.since, e.beat = true, term, e.cfg.Identity, validUntil, now, now
	e.mu.Unlock()
	e.emit(Event{Kind: EventStartedLeading, Term: term, Reason: "acquired", ValidUntil: e.reported(validUntil)})
	e.log.Info("started leading", "term", term)
	if e.cb.OnNewLeader != nil {
		e.cb.OnNewLeader(e.cfg.Identity, term)
	}

	taskCtx, cancelTask := context.WithCancel(context.WithValue(ctx, heartbeatKey{}, e))
	taskDone := make(chan struct{})
	var taskErr error
	go func() {
		defer close(taskDone)
		if e.cb.OnStartedLeading == nil {
			<-taskCtx.Done()
			return
		}
		taskErr = e.cb.OnStartedLeading(taskCtx, term)
	}()

	// Renews run on their own goroutine so that a hung request can never keep
	// this loop from stepping down at the deadline. One renew at a time.
	renewCtx, cancelRenew := context.WithCancel(ctx)
	defer cancelRenew()
	var inflight chan renewResult
	due := false // a tick came while a renew was in flight: renew again as soon as it returns
	startRenew := func() {
		due = false
		ch := make(chan renewResult, 1)
		inflight = ch
		sent := time.Now()
		// The request may not outlive the leadership it is trying to extend.
		end := sent.Add(e.cfg.RequestTimeout())
		e.mu.Lock()
		if e.deadline.Before(end) && !e.cfg.unsafeNoStepDown {
			end = e.deadline
		}
		e.mu.Unlock()
		go func() {
			c, cancel := context.WithDeadline(renewCtx, end)
			defer cancel()
			ch <- renewResult{sent: sent, err: e.lock.Renew(c)}
		}()
	}
	stop := func(reason string, release, shutdown bool) {
		cancelRenew()
		if inflight != nil {
			// Keep Lock calls sequential: let the cancelled renew return first.
			select {
			case <-inflight:
			case <-time.After(e.cfg.RequestTimeout()):
			}
		}
		e.stepDown(ctx, term, reason, release, shutdown, cancelTask, taskDone)
	}

	renewTick := time.NewTicker(e.cfg.RenewInterval)
	defer renewTick.Stop()
	deadlineTimer := time.NewTimer(time.Until(validUntil))
	defer deadlineTimer.Stop()

	for {
		select {
		case <-ctx.Done():
			// 4. Graceful stop: task first, then release so a follower takes
			// over within one retry period.
			stop("shutdown", true, true)
			return false

		case <-deadlineTimer.C:
			e.mu.Lock()
			dl := e.deadline
			e.mu.Unlock()
			if e.cfg.unsafeNoStepDown {
				deadlineTimer.Reset(e.cfg.RenewInterval)
				continue
			}
			if time.Now().Before(dl) { // extended by a renew since the timer was set
				deadlineTimer.Reset(time.Until(dl))
				continue
			}
			// 3. No successful renew sent within D: step down now. The lease
			// may still be ours on the server, so release it best-effort.
			stop("renew deadline exceeded", true, false)
			return true

		case <-renewTick.C:
			e.touch(false)
			if reason := e.stalled(); reason != "" {
				// 5. A wedged task under a healthy lease is the pattern's
				// known failure: give the lease to someone who can work.
				stop(reason, true, false)
				return true
			}
			if inflight == nil {
				startRenew()
			} else {
				due = true
			}

		case r := <-inflight:
			inflight = nil
			switch {
			case r.err == nil:
				e.touch(true)
				e.mu.Lock()
				dl := r.sent.Add(e.cfg.RenewDeadline)
				if dl.After(e.deadline) {
					e.deadline = dl
				}
				dl = e.deadline
				e.mu.Unlock()
				deadlineTimer.Reset(time.Until(dl))
				e.emit(Event{Kind: EventRenewed, Term: term, ValidUntil: e.reported(dl)})
			case errors.Is(r.err, ErrLockLost) && !e.cfg.unsafeNoStepDown:
				// A definite loss: someone broke or took the lease. Nothing to
				// release.
				stop("lease lost: "+r.err.Error(), false, false)
				return false
			default:
				e.emit(Event{Kind: EventRenewFailed, Term: term, Reason: r.err.Error()})
				e.log.Warn("renew failed", "term", term, "err", r.err)
			}
			if due {
				startRenew()
			}

		case <-taskDone:
			if ctx.Err() != nil {
				stop("shutdown", true, true)
				return false
			}
			reason := "task exited"
			if taskErr != nil {
				reason += ": " + taskErr.Error()
			}
			stop(reason, true, false)
			return true
		}
	}
}

// reported is the ValidUntil to publish: none for an unsafe elector, whose
// claim has no bound.
func (e *Elector) reported(t time.Time) time.Time {
	if e.cfg.unsafeNoStepDown {
		return time.Time{}
	}
	return t
}

func (e *Elector) stalled() string {
	if e.cfg.WatchdogTimeout <= 0 {
		return ""
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if idle := time.Since(e.beat); idle > e.cfg.WatchdogTimeout {
		return fmt.Sprintf("watchdog: no task heartbeat for %s", idle.Round(time.Millisecond))
	}
	return ""
}

// stepDown ends leadership of term: leadership stops being reported at once,
// the task is cancelled and awaited (bounded), then the callbacks and events
// follow and, if asked, the lease is released.
func (e *Elector) stepDown(ctx context.Context, term int64, reason string, release, shutdown bool,
	cancelTask context.CancelFunc, taskDone <-chan struct{}) {
	e.mu.Lock()
	validUntil := e.deadline
	e.leading, e.stopping, e.leader, e.since = false, shutdown, "", time.Now()
	e.mu.Unlock()

	cancelTask()
	select {
	case <-taskDone:
	case <-time.After(e.cfg.ShutdownGrace):
		msg := fmt.Sprintf("leader task of term %d did not return within %s of being cancelled (%s)", term, e.cfg.ShutdownGrace, reason)
		e.log.Error(msg)
		e.mu.Lock()
		e.wedged = msg
		e.mu.Unlock()
		go func() {
			<-taskDone
			e.mu.Lock()
			e.wedged = ""
			e.mu.Unlock()
		}()
	}

	e.emit(Event{Kind: EventStoppedLeading, Term: term, Reason: reason, ValidUntil: e.reported(validUntil)})
	e.log.Info("stopped leading", "term", term, "reason", reason)
	if e.cb.OnStoppedLeading != nil {
		e.cb.OnStoppedLeading(reason)
	}
	if !release {
		return
	}
	// The caller's ctx may be cancelled (shutdown): release on a fresh,
	// bounded context.
	if err := e.call(context.WithoutCancel(ctx), e.lock.Release); err != nil {
		e.log.Warn("release failed; the lease will expire on its own", "term", term, "err", err)
		return
	}
	e.emit(Event{Kind: EventReleased, Term: term, Reason: reason})
}
