package chaos

import (
	"context"
	"fmt"
	"sync"
)

// intercept is the state the HTTP faults share: the proxy they are on, how
// many requests they have taken in this injection, and the deliveries still
// under way (Remove waits for them).
type intercept struct {
	place
	proxy    *HTTPProxy
	taken    int
	inflight sync.WaitGroup
	changed  chan struct{} // closed and replaced whenever the fault acts
}

// take counts one more request taken if the fault is active and its count
// allows; the caller holds mu.
func (s *intercept) take(count int) bool {
	if !s.active || (count > 0 && s.taken >= count) {
		return false
	}
	s.taken++
	return true
}

// notify wakes Await callers; the caller holds mu.
func (s *intercept) notify() {
	if s.changed != nil {
		close(s.changed)
	}
	s.changed = make(chan struct{})
}

// waitChange returns a channel closed at the fault's next action; the caller holds mu.
func (s *intercept) waitChange() <-chan struct{} {
	if s.changed == nil {
		s.changed = make(chan struct{})
	}
	return s.changed
}

func (s *intercept) inject(ctx context.Context, p *HTTPProxy, kind Kind, h hook) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if p == nil {
		return fmt.Errorf("%w: %s %v", ErrNoTarget, kind, errNoProxy)
	}
	return s.putIn(fmt.Sprintf("%s on %s", kind, p.Name()), func() error {
		if err := p.install(h); err != nil {
			return err
		}
		s.proxy, s.taken = p, 0
		return nil
	})
}

// remove takes the fault off the proxy, then waits (within ctx) for the
// requests it still holds to reach storage.
func (s *intercept) remove(ctx context.Context, h hook) error {
	_ = s.takeOut(func() error {
		s.proxy.uninstall(h)
		return nil
	})
	done := make(chan struct{})
	go func() { s.inflight.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("chaos: held requests still under way: %w", ctx.Err())
	}
}

// await waits until n() ≥ want or ctx ends.
func (s *intercept) await(ctx context.Context, want int, n func() int) error {
	for {
		s.mu.Lock()
		got, ch := n(), s.waitChange()
		s.mu.Unlock()
		if got >= want {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("chaos: %d of %d awaited: %w", got, want, ctx.Err())
		}
	}
}

func httpTargetOf(p *HTTPProxy) string {
	if p == nil {
		return ""
	}
	return p.Name()
}
