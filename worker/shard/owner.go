package shard

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"
	azlease "github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/lease"

	"github.com/blobleader/blobleader/worker/election"
	"github.com/blobleader/blobleader/worker/election/bloblock"
	"github.com/blobleader/blobleader/worker/election/lease"
	"github.com/blobleader/blobleader/worker/storage"
)

// shardRun is one shard's elector on this worker: contending (as the
// shard's owner or standby), holding the shard's lease and running its task,
// or stopping. Ownership safety is the elector's: the task runs only while
// the lease is held under the renew-deadline rules of the election.
type shardRun struct {
	n      int
	el     *election.Elector
	cancel context.CancelFunc
	done   chan struct{}

	mu         sync.Mutex
	stopping   bool
	stopReason string    // reported on shard_released instead of "shutdown"
	drainSince time.Time // when we first saw the shard moved away while holding it
}

// gatedLock lets the shard's elector acquire only while the worker allows
// it (see Worker.mayAcquire); every other call goes straight to the lease.
type gatedLock struct {
	lease.Lock
	allow func(ctx context.Context) error
}

func (g gatedLock) Acquire(ctx context.Context, leaseID string, d time.Duration) error {
	if err := g.allow(ctx); err != nil {
		return err
	}
	return g.Lock.Acquire(ctx, leaseID, d)
}

type progressKey struct{}

type progressSink struct {
	w     *Worker
	shard int
	term  int64
}

// Held reports whether the shard lease behind a shard task's ctx is held
// right now, checked against its renew deadline at the moment of asking: a
// task skips a side effect the moment ownership lapses, even before its
// context is cancelled. It is false for any other context.
func Held(ctx context.Context) bool {
	_, ok := ctx.Value(progressKey{}).(progressSink)
	return ok && election.Leading(ctx) // the shard elector's leadership: the innermost
}

// ReportProgress records that the shard task whose context is ctx has
// written up to seq (its fenced ledger's last sequence). The worker reports
// it to the leader, whose summary shows it. It does nothing for other
// contexts.
func ReportProgress(ctx context.Context, seq int64) {
	if p, ok := ctx.Value(progressKey{}).(progressSink); ok {
		p.w.setProgress(p.shard, p.term, seq)
	}
}

// startShard begins contending for shard n. The caller holds w.mu.
func (w *Worker) startShard(ctx context.Context, n int) (*shardRun, error) {
	lock, err := bloblock.New(w.cfg.Container, w.layout.Shard(n))
	if err != nil {
		return nil, err
	}
	cfg := w.cfg.Election
	cfg.Mode = Mode(w.cfg.Shards)
	cfg.ObserveEvery = 60 // the holder of a shard is for logs only: save the reads
	// Shard leases wait out L (docs/failover.md#early-takeover): the view's
	// gate decides who may take a shard, and a break would bypass it.
	cfg.TakeoverAfter, cfg.BreakPeriod = 0, 0
	// A shard's holder is for logs only: no confirmation writes (one per
	// shard per ConfirmEvery would be the pool's largest write cost).
	cfg.ConfirmEvery = 0
	cfg.Logger = w.elog.With("shard", n)
	r := &shardRun{n: n, done: make(chan struct{})}
	el, err := election.NewElector(cfg, gatedLock{Lock: lock, allow: func(ctx context.Context) error { return w.mayAcquire(ctx, n) }},
		election.Callbacks{
			OnStartedLeading: func(ctx context.Context, term int64) error {
				ctx = context.WithValue(ctx, progressKey{}, progressSink{w: w, shard: n, term: term})
				return w.cfg.Task(ctx, n, term)
			},
			OnEvent: func(ev election.Event) { w.shardEvent(r, ev) },
		})
	if err != nil {
		return nil, err
	}
	rctx, cancel := context.WithCancel(ctx)
	r.el, r.cancel = el, cancel
	go func() {
		defer close(r.done)
		_ = el.Run(rctx)
	}()
	return r, nil
}

// mayAcquire is the gate in front of shard n's acquisitions: the view's
// (view.mayAcquire), except that a standby still warming up may take a lease
// that nobody is coming back for.
//
// The warm-up exists for leases that expired in an outage the standby also
// saw: their owners are back too and must win them first. Storage tells that
// case apart: such a lease is "expired". One its holder released (a graceful
// leave, a move, a task that ended, a step-down whose release got through)
// is "available", and one an operator broke is "broken"; either is taken at
// once, so a release is followed within P·1.1 + ε however recently the
// standby's view was stale. The read costs one request per poll, and only
// while warming up, in place of the acquire a warm standby would send.
func (w *Worker) mayAcquire(ctx context.Context, n int) error {
	err := w.view.mayAcquire(n, time.Now())
	if !errors.Is(err, errWarmingUp) {
		return err
	}
	props, perr := w.cfg.Container.NewBlobClient(w.layout.Shard(n)).GetProperties(storage.WithOp(ctx, "shard_lease_state"), nil)
	switch {
	case bloberror.HasCode(perr, bloberror.BlobNotFound, bloberror.ContainerNotFound):
		return nil // never leased, or deleted: no owner to wait for
	case perr != nil:
		return fmt.Errorf("%w (and its lease state is unknown: %v)", err, perr)
	case props.LeaseState != nil && (*props.LeaseState == azlease.StateTypeAvailable || *props.LeaseState == azlease.StateTypeBroken):
		return nil
	}
	return err
}

// stop ends the run: a held shard's task is stopped and its lease released
// (the elector's graceful stop); reason is what shard_released says.
func (r *shardRun) stop(reason string) {
	r.mu.Lock()
	if !r.stopping {
		r.stopping, r.stopReason = true, reason
	}
	r.mu.Unlock()
	r.cancel()
}

func (r *shardRun) isStopping() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stopping
}

// shardEvent turns the shard elector's events into shard events.
func (w *Worker) shardEvent(r *shardRun, ev election.Event) {
	out := Event{Time: ev.Time, Shard: r.n, Term: ev.Term, Reason: ev.Reason, ValidUntil: ev.ValidUntil}
	switch ev.Kind {
	case election.EventStartedLeading:
		out.Kind = EventShardAcquired
	case election.EventRenewed:
		out.Kind = EventShardRenewed
	case election.EventStoppedLeading, election.EventReleased:
		out.Kind = EventShardReleased
		if ev.Kind == election.EventReleased {
			out.Kind, out.ValidUntil = EventShardLeaseReleased, time.Time{}
		}
		r.mu.Lock()
		if r.stopReason != "" && ev.Reason == "shutdown" {
			out.Reason = r.stopReason
		}
		r.mu.Unlock()
	default:
		// observed_leader, acquire_failed (including the gate's refusals),
		// renew_failed: logs only.
		return
	}
	w.emit(out)
}
