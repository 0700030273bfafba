package election

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/blobleader/blobleader/worker/election/lease"
)

// ErrAlreadyRunning is returned by Run when the elector is already running.
var ErrAlreadyRunning = errors.New("election: elector already running")

// Callbacks connect the election to the service. All are optional.
type Callbacks struct {
	// OnStartedLeading is the leader task. It runs in its own goroutine with a
	// context that is cancelled the moment leadership ends, and gets the
	// fencing term: every side effect should carry it. It should run until
	// ctx is cancelled; if it returns, the elector steps down and releases
	// the lease (a leader that no longer does its job lets another do it).
	// It is never started once its leadership has lapsed.
	OnStartedLeading func(ctx context.Context, term int64) error
	// OnStoppedLeading is called after the task has returned (or the grace
	// period ran out), with the reason leadership ended.
	OnStoppedLeading func(reason string)
	// OnNewLeader is called when the known leader or term changes, including
	// when we become leader. It never names us while we follow.
	OnNewLeader func(identity string, term int64)
	// OnEvent receives every Event, synchronously: it must not block.
	OnEvent func(Event)
}

// Elector runs one contender's side of the election. Create it with
// NewElector, then call Run.
type Elector struct {
	cfg  Config
	lock lease.Lock
	cb   Callbacks
	log  *slog.Logger

	mu           sync.Mutex
	running      bool
	stopping     bool
	leading      bool      // we hold a leadership (until the loop steps down)
	ledTerm      int64     // the term we lead; meaningful while leading
	deadline     time.Time // leadership valid until (monotonic); meaningful while leading
	seenTerm     int64     // the last term observed in the record while following
	seenBy       string    // who the record named with seenTerm; never us while we follow
	confirmed    time.Time // when storage last confirmed seenBy: a read of the record naming it, or (leading) our renew's send
	highest      int64     // the highest term we have seen or led: the in-memory term floor
	since        time.Time // when the current role began
	lastLoop     time.Time // last progress of the election loop
	lastReply    time.Time // last definite answer from storage
	lastProgress time.Time // last progress the leader task reported (Progress), or the leadership's start
	progressed   bool      // the current (or last) leadership's task reported progress at least once
	stalls       int       // leaderships in a row the watchdog ended without any progress
	stallsTotal  int64     // leaderships ended without progress, ever (NoProgressStepDowns)
	backoffUntil time.Time // end of the pause after a leadership without progress (zero: none)
	wedged       string    // non-empty while a cancelled task has not returned
	rejected     string    // non-empty while storage refuses our term write (lease.ErrRejected)
	unusable     string    // non-empty while the lock's record cannot give a next term (lease.ErrUnusableRecord)
	toldAt       time.Time // when unusable was last logged and emitted (once per LeaseDuration)

	setup   setupWatch   // a conflicting set-up seen in the lock's record (conflict.go)
	confirm confirmWatch // whether the record's holder still confirms it (confirm.go)
	answers answers      // storage's answers: expected or not (answers.go)
}

// NewElector validates cfg and returns an elector on lock.
func NewElector(cfg Config, lock lease.Lock, cb Callbacks) (*Elector, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if lock == nil {
		return nil, fmt.Errorf("%w: lock is nil", ErrInvalidConfig)
	}
	if _, ok := lock.(lease.Breaker); cfg.takeoverEnabled() && !ok {
		return nil, fmt.Errorf("%w: TakeoverAfter is set but %s cannot break leases (no Breaker)", ErrInvalidConfig, lock.Describe())
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
		won, ok := e.follow(ctx, pause)
		if !ok {
			e.mu.Lock()
			e.stopping = true
			e.mu.Unlock()
			return nil
		}
		end := e.lead(ctx, won)
		if ctx.Err() != nil {
			return nil
		}
		pause = e.handOffPause(end)
	}
}

// handOffPause is how long the elector waits after a leadership ends before
// it contends again (docs/architecture.md#the-election, hand-off pause and
// backoff).
//
// After any leadership — handed on (watchdog, task exit, deadline) or lost
// (broken, deleted) — the other contenders poll first: without the pause we
// would race to win back a lease we just gave up or an operator just broke,
// and a task that exits at once would spin. Followers poll within P·1.1, so
// 2·P (jittered) leaves them the field.
//
// A leadership that ended without any progress at all (the watchdog's, or
// a task's that returned ErrNoProgress) doubles the pause for each such
// leadership in a row — 4·P, 8·P, … — up to 4·L (never
// below 2·P): a resource nobody can make progress on (a poisoned ledger)
// then costs the fleet a few short leaderships, not one every few seconds.
// A leadership that made progress resets the count.
func (e *Elector) handOffPause(end ending) time.Duration {
	pause := 2 * e.cfg.JitteredRetryPeriod()
	e.mu.Lock()
	defer e.mu.Unlock()
	switch {
	case e.progressed:
		e.stalls = 0
	case end.noProgress:
		e.stalls++
	}
	if !end.noProgress || e.stalls == 0 {
		return pause
	}
	pause = min(pause<<min(e.stalls, 16), max(2*e.cfg.RetryPeriod, maxBackoffLeases*e.cfg.LeaseDuration))
	e.backoffUntil = time.Now().Add(pause)
	return pause
}

// maxBackoffLeases bounds the pause after leaderships without progress:
// at most this many lease durations.
const maxBackoffLeases = 4

func (e *Elector) touch(reply bool) {
	e.mu.Lock()
	now := time.Now()
	e.lastLoop = now
	if reply {
		e.lastReply = now
	}
	e.mu.Unlock()
}

// call runs one storage operation with the request timeout, and notes the
// answer (answers.go).
func (e *Elector) call(ctx context.Context, op func(context.Context) error) error {
	err := e.cfg.withinRequestTimeout(ctx, op)
	e.noteAnswer(ctx, err)
	return err
}

// noteTerm raises the in-memory term floor; e.mu must be held.
func (e *Elector) noteTerm(t int64) {
	if t > e.highest {
		e.highest = t
	}
}

// newLeaseID names one leadership's lease (a GUID, as Azure requires).
func newLeaseID() string { return uuid.NewString() }
