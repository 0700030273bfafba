package mutex

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/blobleader/blobleader/worker/election/lease"
)

// renewLoop renews every RenewInterval under the elector's deadline rule
// (docs/architecture.md#the-election, "Leading"): each renew runs on its own
// goroutine with a context ending at min(send + request timeout, deadline),
// so a hung request never delays the end; a success moves the deadline to
// its send + RenewDeadline; the deadline passing, or a definite loss, ends
// the holding at once. It returns after the in-flight renew has.
func (h *Held) renewLoop() {
	defer close(h.exited)
	tick := time.NewTicker(h.l.cfg.RenewInterval)
	defer tick.Stop()
	deadline := time.NewTimer(time.Until(h.ValidUntil()))
	defer deadline.Stop()
	var inflight chan renewResult
	for {
		select {
		case <-h.stop:
			drain(inflight)
			return
		case <-deadline.C:
			if dl := h.ValidUntil(); time.Now().Before(dl) {
				deadline.Reset(time.Until(dl))
				continue
			}
			h.end(fmt.Errorf("%w: renew deadline passed", ErrLost))
			drain(inflight)
			h.giveUpLapsed()
			return
		case <-tick.C:
			if inflight == nil {
				inflight = h.startRenew()
			}
		case r := <-inflight:
			inflight = nil
			if h.renewed(r) {
				return
			}
			deadline.Reset(time.Until(h.ValidUntil()))
		}
	}
}

type renewResult struct {
	sent time.Time
	err  error
}

// startRenew sends one renew on its own goroutine; the request may not
// outlive the holding it tries to extend.
func (h *Held) startRenew() chan renewResult {
	ch := make(chan renewResult, 1)
	sent := time.Now()
	end := sent.Add(h.l.cfg.RequestTimeout())
	if dl := h.ValidUntil(); dl.Before(end) {
		end = dl
	}
	go func() {
		ctx, cancel := context.WithDeadline(context.Background(), end)
		defer cancel()
		bl, err := h.l.blobLease(h.lease.Resource)
		if err == nil {
			err = leaseAnswer(bl.Renew(ctx, h.lease.ID))
		}
		ch <- renewResult{sent: sent, err: err}
	}()
	return ch
}

// renewed applies a renew's answer and reports whether the holding ended.
func (h *Held) renewed(r renewResult) bool {
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
	_ = h.l.Release(ctx, h.lease, 0)
}

// drain waits for the renew in flight, if any (bounded by its own context).
func drain(ch chan renewResult) {
	if ch != nil {
		<-ch
	}
}
