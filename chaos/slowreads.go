package chaos

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// SlowReads makes one worker's requests for some blobs slow — by default the
// shard pool's member reports, which a --shards leader reads every summary:
// each is held Delay before it goes to storage, on a connection of its own,
// and answered normally. With Delay below the request timeout nothing fails;
// only time passes, once per blob read. It is the fault behind "slow member
// reads": a coordinator that reads members one after another spends members ×
// Delay in one pass. Other requests (the renews among them) are untouched.
type SlowReads struct {
	Prefix string `json:"prefix"` // blob names starting with this are slowed, e.g. "leader-shards/reports/"
	Delay  int64  `json:"delay"`  // milliseconds each matching read waits before it is sent

	Proxy *HTTPProxy `json:"-"`

	state intercept
}

var _ Fault = (*SlowReads)(nil)

func (f *SlowReads) SetHTTPProxy(p *HTTPProxy) { f.Proxy = p }

func (f *SlowReads) Kind() Kind     { return KindSlowReads }
func (f *SlowReads) Target() string { return httpTargetOf(f.Proxy) }

func (f *SlowReads) Inject(ctx context.Context) error {
	if f.Prefix == "" {
		return fmt.Errorf("%w: slow_reads needs a blob name prefix", ErrInvalid)
	}
	if f.Delay <= 0 {
		return fmt.Errorf("%w: delay %d ms (want > 0)", ErrInvalid, f.Delay)
	}
	return f.state.inject(ctx, f.Proxy, KindSlowReads, f)
}

// Remove stops slowing reads and waits, within ctx, for the ones under way.
func (f *SlowReads) Remove(ctx context.Context) error { return f.state.remove(ctx, f) }

// Slowed is how many reads this injection has slowed.
func (f *SlowReads) Slowed() int {
	f.state.mu.Lock()
	defer f.state.mu.Unlock()
	return f.state.taken
}

// AwaitSlowed waits until n reads have been slowed.
func (f *SlowReads) AwaitSlowed(ctx context.Context, n int) error {
	return f.state.await(ctx, n, func() int { return f.state.taken })
}

func (f *SlowReads) hold(Op) (time.Duration, func(Delivery), bool) { return 0, nil, false }
func (f *SlowReads) drop(Op, int) bool                             { return false }

func (f *SlowReads) holdPath(op Op, path string) (time.Duration, func(Delivery), bool) {
	if op != OpOther || !strings.Contains(path, "/"+f.Prefix) {
		return 0, nil, false
	}
	f.state.mu.Lock()
	defer f.state.mu.Unlock()
	if !f.state.take(0) {
		return 0, nil, false
	}
	f.state.inflight.Add(1)
	f.state.notify()
	return time.Duration(f.Delay) * time.Millisecond, func(Delivery) { f.state.inflight.Done() }, true
}
