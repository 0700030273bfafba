package chaos

import (
	"context"
	"fmt"
	"time"
)

// LostResponse delivers chosen requests of one worker to storage and drops
// storage's answer: the request took effect, and the client's connection is
// reset, so it cannot know the outcome (an acquire that won, a term write
// that landed). Status narrows it to one answer (201 drops only an acquire
// that was granted).
type LostResponse struct {
	Op     Op  `json:"op"`     // the operation: acquire, renew, release, break, change, metadata, append, other or *
	Status int `json:"status"` // drop only answers with this HTTP status; 0 = any status
	Count  int `json:"count"`  // how many answers to drop; 0 = every matching one while injected

	Proxy *HTTPProxy `json:"-"`

	state intercept
	drops []Drop // guarded by state.mu
}

// Drop is one answer LostResponse dropped.
type Drop struct {
	Op     Op        `json:"op"`
	At     time.Time `json:"at"`     // when storage's answer was dropped
	Status int       `json:"status"` // the answer the client never saw
}

var _ Fault = (*LostResponse)(nil)

func (f *LostResponse) SetHTTPProxy(p *HTTPProxy) { f.Proxy = p }

func (f *LostResponse) Kind() Kind     { return KindLostResponse }
func (f *LostResponse) Target() string { return httpTargetOf(f.Proxy) }

func (f *LostResponse) Inject(ctx context.Context) error {
	if err := f.Op.validate(); err != nil {
		return err
	}
	if f.Status != 0 && (f.Status < 100 || f.Status > 599) {
		return fmt.Errorf("%w: status %d (want an HTTP status 100..599, or 0 for any)", ErrInvalid, f.Status)
	}
	if f.Count < 0 {
		return fmt.Errorf("%w: count %d (want ≥ 0; 0 = every matching answer)", ErrInvalid, f.Count)
	}
	return f.state.inject(ctx, f.Proxy, KindLostResponse, f)
}

// Remove stops dropping answers; nothing is in flight.
func (f *LostResponse) Remove(ctx context.Context) error { return f.state.remove(ctx, f) }

// Dropped lists the answers dropped so far.
func (f *LostResponse) Dropped() []Drop {
	f.state.mu.Lock()
	defer f.state.mu.Unlock()
	return append([]Drop(nil), f.drops...)
}

// AwaitDropped waits until n answers have been dropped and returns them.
func (f *LostResponse) AwaitDropped(ctx context.Context, n int) ([]Drop, error) {
	err := f.state.await(ctx, n, func() int { return len(f.drops) })
	return f.Dropped(), err
}

func (f *LostResponse) hold(Op) (time.Duration, func(Delivery), bool) { return 0, nil, false }

func (f *LostResponse) drop(op Op, status int) bool {
	f.state.mu.Lock()
	defer f.state.mu.Unlock()
	if !f.Op.matches(op) || (f.Status != 0 && status != f.Status) || !f.state.take(f.Count) {
		return false
	}
	f.drops = append(f.drops, Drop{Op: op, At: time.Now(), Status: status})
	f.state.notify()
	return true
}
