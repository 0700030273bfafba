package chaos

import "context"

// LateBreak holds one worker's Break Lease requests in flight and delivers
// them to storage Delay later, after the worker gave up on them (its request
// timeout passed): a follower whose early-takeover break was decided on a
// read of one leadership, and that storage receives when another leadership
// may hold the lease. It is the late-delivery machinery (LateDelivery) aimed
// at breaks, with its own kind on the timeline.
type LateBreak struct {
	Delay int64 `json:"delay"` // milliseconds a held break waits before it is sent to storage
	Count int   `json:"count"` // how many breaks to hold; 0 = every one while injected

	Proxy *HTTPProxy `json:"-"`

	late LateDelivery
}

var _ Fault = (*LateBreak)(nil)

func (f *LateBreak) SetHTTPProxy(p *HTTPProxy) { f.Proxy = p }

func (f *LateBreak) Kind() Kind     { return KindLateBreak }
func (f *LateBreak) Target() string { return httpTargetOf(f.Proxy) }

// Inject starts holding the worker's breaks.
func (f *LateBreak) Inject(ctx context.Context) error {
	f.late.Op, f.late.Delay, f.late.Count, f.late.Proxy = OpBreak, f.Delay, f.Count, f.Proxy
	return f.late.Inject(ctx)
}

// Remove stops holding breaks and waits, within ctx, until the ones already
// held have reached storage.
func (f *LateBreak) Remove(ctx context.Context) error { return f.late.Remove(ctx) }

// Held is how many breaks this injection has taken over.
func (f *LateBreak) Held() int { return f.late.Held() }

// Deliveries lists what became of every held break so far: when storage got
// it and what it answered (202 broke a lease; 412 refused a break whose
// condition no longer held; 409 found no lease).
func (f *LateBreak) Deliveries() []Delivery { return f.late.Deliveries() }

// AwaitDelivered waits until n held breaks have been delivered (or given up).
func (f *LateBreak) AwaitDelivered(ctx context.Context, n int) ([]Delivery, error) {
	return f.late.AwaitDelivered(ctx, n)
}
