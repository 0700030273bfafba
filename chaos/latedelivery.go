package chaos

import (
	"context"
	"fmt"
	"time"
)

// LateDelivery holds chosen requests of one worker in flight and delivers
// them to storage later, on a connection of their own: a renew or a release
// that the client has long given up on (its timeout passed) still arrives and
// takes effect. toxiproxy cannot do this: it delays bytes, not one request,
// and a closed client connection takes its bytes with it.
//
// With Delay below the client's timeout the request is merely slow and the
// client gets storage's answer.
type LateDelivery struct {
	Op    Op    `json:"op"`    // the operation to hold: acquire, renew, release, break, change, metadata, append, other or *
	Delay int64 `json:"delay"` // milliseconds a held request waits before it is sent to storage
	Count int   `json:"count"` // how many matching requests to hold; 0 = every one while injected

	Proxy *HTTPProxy `json:"-"`

	state      intercept
	deliveries []Delivery // guarded by state.mu
}

var _ Fault = (*LateDelivery)(nil)

func (f *LateDelivery) SetHTTPProxy(p *HTTPProxy) { f.Proxy = p }

func (f *LateDelivery) Kind() Kind     { return KindLateDelivery }
func (f *LateDelivery) Target() string { return httpTargetOf(f.Proxy) }

func (f *LateDelivery) Inject(ctx context.Context) error {
	if err := f.Op.validate(); err != nil {
		return err
	}
	if f.Delay < 0 {
		return fmt.Errorf("%w: delay %d ms (want ≥ 0)", ErrInvalid, f.Delay)
	}
	if f.Count < 0 {
		return fmt.Errorf("%w: count %d (want ≥ 0; 0 = every matching request)", ErrInvalid, f.Count)
	}
	return f.state.inject(ctx, f.Proxy, KindLateDelivery, f)
}

// Remove stops holding requests and waits, within ctx, until the ones already
// held have been delivered (they are in flight: taking them back would be a
// different fault).
func (f *LateDelivery) Remove(ctx context.Context) error { return f.state.remove(ctx, f) }

// Held is how many requests this injection has taken over.
func (f *LateDelivery) Held() int {
	f.state.mu.Lock()
	defer f.state.mu.Unlock()
	return f.state.taken
}

// Deliveries lists what became of every held request so far, in delivery order.
func (f *LateDelivery) Deliveries() []Delivery {
	f.state.mu.Lock()
	defer f.state.mu.Unlock()
	return append([]Delivery(nil), f.deliveries...)
}

// AwaitDelivered waits until n held requests have been delivered (or given
// up) and returns the deliveries.
func (f *LateDelivery) AwaitDelivered(ctx context.Context, n int) ([]Delivery, error) {
	err := f.state.await(ctx, n, func() int { return len(f.deliveries) })
	return f.Deliveries(), err
}

// AwaitHeld waits until n requests have been taken over.
func (f *LateDelivery) AwaitHeld(ctx context.Context, n int) error {
	return f.state.await(ctx, n, func() int { return f.state.taken })
}

func (f *LateDelivery) hold(op Op) (time.Duration, func(Delivery), bool) {
	f.state.mu.Lock()
	defer f.state.mu.Unlock()
	if !f.Op.matches(op) || !f.state.take(f.Count) {
		return 0, nil, false
	}
	f.state.inflight.Add(1)
	f.state.notify()
	done := func(d Delivery) {
		f.state.mu.Lock()
		f.deliveries = append(f.deliveries, d)
		f.state.notify()
		f.state.mu.Unlock()
		f.state.inflight.Done()
	}
	return time.Duration(f.Delay) * time.Millisecond, done, true
}

func (f *LateDelivery) drop(Op, int) bool { return false }
