package shard

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/blobleader/blobleader/worker/election"
	"github.com/blobleader/blobleader/worker/election/bloblock"
)

// Worker is one member of a shard pool: it keeps its member lease, follows
// the leader's assignment, contends for the shards the assignment gives it
// (as owner or standby), runs their tasks while it holds their leases, and
// reports progress. While this process leads the election, Lead is its
// leader task: it coordinates the pool.
type Worker struct {
	cfg    Config
	layout Layout
	log    *slog.Logger // with identity and pool
	elog   *slog.Logger // for the member and shard electors, which add identity themselves
	view   view
	// lock reads the election lock's record: only it says who leads, and
	// the highest term it has shown (lockTerm) bounds the assignments this
	// worker follows (repairs.go).
	lock     *bloblock.Lock
	lockTerm atomic.Int64

	mu       sync.Mutex
	runs     map[int]*shardRun
	progress map[int]ShardProgress
	reported string // the last report written, to skip unchanged ones
	leading  *Assignment
	summary  *Summary
	unowned  unownedShards
	member   *election.Elector
	conflict string    // while leading: members of another pool size (sizes.go)
	toldAt   time.Time // when conflict was last logged
}

// unownedShards is what the coordinator's last listing showed of assigned
// shards with no lease held.
type unownedShards struct {
	count   int
	since   time.Time // since when some have been unowned without a break
	leading bool      // this worker coordinates (the fields are its)
}

// Unowned returns, while this worker coordinates the pool, how many shards
// the assignment in force gives an owner while its last listing showed no
// lease held on them, and since when there have been such shards without a
// break (zero when none); ok is false when it does not coordinate.
func (w *Worker) Unowned() (count int, since time.Time, ok bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.unowned.count, w.unowned.since, w.unowned.leading
}

// New validates cfg and returns a worker; call Run.
func New(cfg Config) (*Worker, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	log := cfg.Election.Logger
	if log == nil {
		log = slog.Default()
	}
	w := &Worker{cfg: cfg, layout: Layout{Blob: cfg.Blob}, runs: map[int]*shardRun{}, progress: map[int]ShardProgress{},
		log:  log.With("identity", cfg.Election.Identity, "pool", Layout{Blob: cfg.Blob}.Pool()),
		elog: log.With("pool", Layout{Blob: cfg.Blob}.Pool())}
	w.view = view{identity: cfg.Election.Identity, ttl: cfg.ViewTTL(), warmup: cfg.standbyWarmup()}
	lock, err := bloblock.New(cfg.Container, cfg.Blob)
	if err != nil {
		return nil, err
	}
	w.lock = lock
	return w, nil
}

// Config returns the worker's configuration (with defaults filled in).
func (w *Worker) Config() Config { return w.cfg }

// Layout names the pool's blobs.
func (w *Worker) Layout() Layout { return w.layout }

// Owned returns the shards whose lease this worker holds right now (each
// checked against its renew deadline at the moment of asking), ascending.
func (w *Worker) Owned() []int {
	w.mu.Lock()
	runs := make([]*shardRun, 0, len(w.runs))
	for _, r := range w.runs {
		runs = append(runs, r)
	}
	w.mu.Unlock()
	out := []int{}
	for _, r := range runs {
		if r.el.IsLeader() {
			out = append(out, r.n)
		}
	}
	slices.Sort(out)
	return out
}

// Assignment returns the assignment this worker last published while it
// leads, and nil when it does not lead.
func (w *Worker) Assignment() *Assignment {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.leading
}

// Viewed returns the assignment this worker follows (nil before the first).
func (w *Worker) Viewed() *Assignment {
	a, _ := w.view.current(time.Now())
	return a
}

// Run takes part in the pool until ctx ends: it holds the member lease,
// follows the assignment every P (jittered) and reconciles the shard
// electors with it. On cancel it stops every shard task and releases every
// shard lease, then the member lease. It returns nil after a clean stop.
func (w *Worker) Run(ctx context.Context) error {
	member, err := w.newMemberElector()
	if err != nil {
		return err
	}
	w.mu.Lock()
	w.member = member
	w.mu.Unlock()
	memberCtx, stopMember := context.WithCancel(context.WithoutCancel(ctx))
	memberDone := make(chan struct{})
	go func() {
		defer close(memberDone)
		_ = member.Run(memberCtx)
	}()

	lastReport := time.Time{}
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			w.stopAll("shutdown")
			stopMember()
			<-memberDone
			return nil
		case <-timer.C:
		}
		if err := w.view.refresh(ctx, w); err != nil && ctx.Err() == nil {
			w.log.Debug("assignment read failed", "err", err)
		}
		w.reconcile(ctx, time.Now())
		if time.Since(lastReport) >= w.cfg.ReportEvery {
			lastReport = time.Now()
			w.writeReport(ctx)
		}
		timer.Reset(w.cfg.Election.JitteredRetryPeriod())
	}
}

// reconcile makes the shard electors match the view: contend for every
// shard we own or stand by for; stop contending for the others at once;
// release a held shard that moved away once the drain has passed. With a
// stale view it starts nothing and releases nothing (the gate stops new
// acquisitions; held leases are governed by their own deadlines).
func (w *Worker) reconcile(ctx context.Context, now time.Time) {
	a, fresh := w.view.current(now)
	wanted := shardsFor(a, w.cfg.Election.Identity)
	w.mu.Lock()
	defer w.mu.Unlock()
	for s, r := range w.runs {
		select {
		case <-r.done:
			delete(w.runs, s)
			continue
		default:
		}
		if r.isStopping() {
			continue
		}
		holding := r.el.IsLeader()
		switch {
		case wanted[s] && fresh:
			r.mu.Lock()
			r.drainSince = time.Time{}
			r.mu.Unlock()
		case !holding:
			if !wanted[s] {
				r.stop("not assigned")
			}
		case fresh: // held, fresh view, no longer ours
			r.mu.Lock()
			if r.drainSince.IsZero() {
				r.drainSince = now
			}
			due := now.Sub(r.drainSince) >= w.cfg.drain()
			r.mu.Unlock()
			if due {
				r.stop(fmt.Sprintf("moved to %s", orNobody(a.owner(s))))
			}
		}
	}
	if !fresh {
		return
	}
	for s := range wanted {
		if _, running := w.runs[s]; running {
			continue
		}
		r, err := w.startShard(ctx, s)
		if err != nil {
			w.log.Error("cannot contend for shard", "shard", s, "err", err)
			continue
		}
		w.runs[s] = r
	}
}

// shardsFor is the shards assignment a (nil: none yet) gives member me,
// as owner or standby: the ones it contends for.
func shardsFor(a *Assignment, me string) map[int]bool {
	wanted := map[int]bool{}
	if a != nil {
		for s := range a.Owners {
			if a.owner(s) == me || a.standby(s) == me {
				wanted[s] = true
			}
		}
	}
	return wanted
}

func orNobody(s string) string {
	if s == "" {
		return "nobody"
	}
	return s
}

// stopAll stops every shard elector (releasing held leases) and waits.
func (w *Worker) stopAll(reason string) {
	w.mu.Lock()
	runs := make([]*shardRun, 0, len(w.runs))
	for _, r := range w.runs {
		runs = append(runs, r)
	}
	w.mu.Unlock()
	for _, r := range runs {
		r.stop(reason)
	}
	for _, r := range runs {
		<-r.done
	}
	w.mu.Lock()
	clear(w.runs)
	w.mu.Unlock()
}

// newMemberElector holds this worker's member lease: the presence the
// leader sees in its listing, which storage itself expires when we die.
func (w *Worker) newMemberElector() (*election.Elector, error) {
	lock, err := bloblock.New(w.cfg.Container, w.layout.Member(w.cfg.Election.Identity))
	if err != nil {
		return nil, err
	}
	cfg := w.cfg.Election
	cfg.Mode = Mode(w.cfg.Shards) // the leader compares it (sizes.go)
	cfg.WatchdogTimeout = 0       // nothing to watch: the lease is the whole job
	cfg.ConfirmEvery = 0          // nobody observes a member's record
	cfg.ObserveEvery = 1 << 20
	cfg.Logger = w.elog.With("member", true)
	return election.NewElector(cfg, lock, election.Callbacks{
		OnStartedLeading: func(ctx context.Context, term int64) error {
			<-ctx.Done()
			return nil
		},
		OnEvent: func(ev election.Event) {
			switch ev.Kind {
			case election.EventStartedLeading:
				w.emit(Event{Kind: EventMemberJoined, Time: ev.Time, Shard: -1})
			case election.EventStoppedLeading:
				w.emit(Event{Kind: EventMemberLeft, Time: ev.Time, Shard: -1, Reason: ev.Reason})
			}
		},
	})
}

// Member reports whether this worker's member lease is held right now.
func (w *Worker) Member() bool {
	w.mu.Lock()
	m := w.member
	w.mu.Unlock()
	return m != nil && m.IsLeader()
}

// Unusable says which shard locks this worker contends for (as owner or
// standby) have a record nobody can lead on, and why, as "shard N: reason"
// joined by "; " in shard order; "" when none has.
func (w *Worker) Unusable() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for _, n := range slices.Sorted(maps.Keys(w.runs)) {
		if u := w.runs[n].el.Status().Unusable; u != "" {
			out = append(out, fmt.Sprintf("shard %d: %s", n, u))
		}
	}
	return strings.Join(out, "; ")
}

// Healthy is the pool member's part of liveness: a wedged shard task (one
// that did not return within the grace after its ownership ended), or a
// shard elector whose loop is stuck — what a restart cures.
func (w *Worker) Healthy() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	var errs []error
	for _, n := range slices.Sorted(maps.Keys(w.runs)) {
		if err := w.runs[n].el.Healthy(); err != nil {
			errs = append(errs, fmt.Errorf("shard %d: %w", n, err))
		}
	}
	return errors.Join(errs...)
}

// Ready is the pool member's part of readiness: what a restart does not
// cure — a shard lock this worker contends for with a record nobody can
// lead on (Unusable), a shard elector's or the member's conflicting set-up,
// and (on the leader) members of another pool size.
func (w *Worker) Ready() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	var errs []error
	if w.conflict != "" {
		errs = append(errs, errors.New(w.conflict))
	}
	if w.member != nil {
		if c := w.member.Status().Conflict; c != "" {
			errs = append(errs, fmt.Errorf("member lease: %s", c))
		}
	}
	for _, n := range slices.Sorted(maps.Keys(w.runs)) {
		st := w.runs[n].el.Status()
		for _, why := range []string{st.Unusable, st.Conflict} {
			if why != "" {
				errs = append(errs, fmt.Errorf("shard %d: %s", n, why))
			}
		}
	}
	return errors.Join(errs...)
}
