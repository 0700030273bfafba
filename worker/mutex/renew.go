package mutex

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/blobleader/blobleader/worker/election/lease"
	"github.com/blobleader/blobleader/worker/internal/renewal"
)

// heldLock is the storage lease a holding renews and releases: the lock's
// *bloblock.Lock (electiontest's fake in tests).
type heldLock interface {
	Inspect(ctx context.Context) (lease.View, error)
	Renew(ctx context.Context, leaseID string) error
	Release(ctx context.Context, leaseID string) error
}

// renewLoop renews every RenewInterval under the elector's deadline rule
// (docs/architecture.md#the-election, "Leading"; package renewal is the one
// machine): each renew runs on its own goroutine with a context ending at
// min(send + request timeout, deadline), so a hung request never delays
// the end; a success moves the deadline to its send + RenewDeadline; the
// deadline passing, or a definite loss, ends the holding at once. It
// returns after the in-flight renew has (cancelled, at most a request
// timeout later).
func (h *Held) renewLoop() {
	defer close(h.exited)
	m := renewal.New(context.Background(), renewal.Hooks[renewResult]{
		Deadline: h.ValidUntil, Start: h.startRenew, Apply: h.renewed,
	}, h.l.cfg.RenewInterval, h.l.cfg.RequestTimeout())
	if m.Run(context.Background(), h.stop) == renewal.Lapsed {
		h.end(fmt.Errorf("%w: renew deadline passed", ErrLost))
		m.Stop()
		h.giveUpLapsed()
		return
	}
	m.Stop() // Unlock (Done), or renewed ended it (Over)
}

type renewResult struct {
	sent time.Time
	err  error
}

// Final: a holding's renew cycle is one request (renewal.Answer).
func (renewResult) Final() bool { return true }

// startRenew sends one renew on its own goroutine, under ctx until end.
func (h *Held) startRenew(ctx context.Context, sent, end time.Time, out chan<- renewResult) {
	go func() {
		c, cancel := context.WithDeadline(ctx, end)
		defer cancel()
		out <- renewResult{sent: sent, err: leaseAnswer(h.lock.Renew(c, h.lease.ID))}
	}()
}

// renewed applies a renew's answer and reports whether the holding ended.
func (h *Held) renewed(r renewResult) (over bool) {
	switch {
	case r.err == nil:
		h.mu.Lock()
		if dl := r.sent.Add(h.l.cfg.RenewDeadline); dl.After(h.deadline) {
			h.deadline = dl
		}
		h.mu.Unlock()
		return false
	case errors.Is(r.err, ErrNotHeld), errors.Is(r.err, ErrNotOwner), errors.Is(r.err, lease.ErrLost):
		// Broken, taken or deleted: nothing to release.
		h.end(fmt.Errorf("%w: %v", ErrLost, r.err))
		return true
	}
	return false // transient: the next tick retries, the deadline decides
}

// giveUpLapsed releases a lease whose holding passed its deadline: the
// lease may still be ours at storage, and with the holding's own ID the
// release can free nothing else.
func (h *Held) giveUpLapsed() {
	ctx, cancel := context.WithTimeout(context.Background(), h.l.cfg.RequestTimeout())
	defer cancel()
	_ = h.release(ctx)
}

// release is Locker.Release of the holding's lease (term 0) on its lock.
func (h *Held) release(ctx context.Context) error {
	if _, err := h.l.heldState(ctx, h.lock, 0); err != nil {
		return err
	}
	return leaseAnswer(h.l.call(ctx, func(c context.Context) error { return h.lock.Release(c, h.lease.ID) }))
}
