// Package renewal keeps one holding of a lease alive under its renew
// deadline, by the rule of docs/architecture.md#the-election ("Leading"):
// the elector's leadership and the mutex's holding both run on it.
//
//   - A renew cycle starts every renew interval, one at a time, on a
//     goroutine of its own; a tick that comes while a cycle is in flight
//     starts the next one as soon as it ends.
//   - A cycle's requests may not outlive the holding they try to extend:
//     they end at min(send + request timeout, deadline), so a hung request
//     never delays the end.
//   - The holder applies each answer: a success moves its deadline to the
//     send + renew deadline; a definite loss ends the holding.
//   - The deadline passing ends the holding at once, whatever is in flight.
//
// The holder keeps the deadline (it publishes it); the machine only reads
// it. Only the goroutine that calls Run, Renew and Stop calls the hooks
// Deadline, Apply and Tick; Start's goroutine sends the answers.
package renewal

import (
	"context"
	"time"
)

// An Answer is one answer of a renew cycle. A cycle sends at most two, the
// last one Final.
type Answer interface{ Final() bool }

// Hooks are the holder's side of the machine.
type Hooks[A Answer] struct {
	// Deadline is the holding's deadline as known now.
	Deadline func() time.Time
	// Start sends one renew cycle, sent now (sent), on a goroutine of its
	// own: its requests run under ctx and until end, and its answers go to
	// out (room for two), the last one Final. It must not block.
	Start func(ctx context.Context, sent, end time.Time, out chan<- A)
	// Apply applies one answer and reports whether the holding is over.
	Apply func(A) (over bool)
	// Tick, if set, runs at each renew tick before the renew starts and
	// reports whether the holding is over.
	Tick func() (over bool)
}

// An End says why Run returned.
type End int

const (
	// Stopped: Run's context ended.
	Stopped End = iota + 1
	// Done: Run's done channel was closed.
	Done
	// Lapsed: the deadline passed without a renew extending it.
	Lapsed
	// Over: Apply or Tick said the holding is over.
	Over
)

// Machine renews one holding. Build it with New, then Run it once, then
// Stop it.
type Machine[A Answer] struct {
	h              Hooks[A]
	interval       time.Duration
	requestTimeout time.Duration
	ctx            context.Context // the cycles' requests; cancelled by Stop
	cancel         context.CancelFunc

	inflight chan A // nil when no cycle is in flight
	due      bool   // a tick came while a cycle was in flight: renew as soon as it ends
}

// New returns a machine renewing every interval, whose requests each get
// requestTimeout and run under a context derived from parent.
func New[A Answer](parent context.Context, h Hooks[A], interval, requestTimeout time.Duration) *Machine[A] {
	m := &Machine[A]{h: h, interval: interval, requestTimeout: requestTimeout}
	m.ctx, m.cancel = context.WithCancel(parent)
	return m
}

// Run renews until the holding ends, and says why it ended: ctx ended, done
// was closed, the deadline passed, or a hook said so. It returns at once,
// with any cycle still in flight: the holder ends its holding first, then
// calls Stop.
func (m *Machine[A]) Run(ctx context.Context, done <-chan struct{}) End {
	tick := time.NewTicker(m.interval)
	defer tick.Stop()
	deadline := time.NewTimer(time.Until(m.h.Deadline()))
	defer deadline.Stop()
	for {
		select {
		case <-ctx.Done():
			return Stopped
		case <-done:
			return Done
		case <-deadline.C:
			if dl := m.h.Deadline(); time.Now().Before(dl) { // extended since the timer was set
				deadline.Reset(time.Until(dl))
				continue
			}
			return Lapsed
		case <-tick.C:
			if m.h.Tick != nil && m.h.Tick() {
				return Over
			}
			m.Renew()
		case a := <-m.inflight:
			final := a.Final()
			if final {
				m.inflight = nil
			}
			if m.h.Apply(a) {
				return Over
			}
			deadline.Reset(time.Until(m.h.Deadline()))
			if final && m.due {
				m.Renew()
			}
		}
	}
}

// Renew starts a renew cycle now, or as soon as the one in flight ends.
func (m *Machine[A]) Renew() {
	if m.inflight != nil {
		m.due = true
		return
	}
	m.due = false
	ch := make(chan A, 2)
	m.inflight = ch
	sent := time.Now()
	end := sent.Add(m.requestTimeout)
	if dl := m.h.Deadline(); dl.Before(end) {
		end = dl
	}
	m.h.Start(m.ctx, sent, end, ch)
}

// Stop cancels the cycle in flight, if any, and waits for its last answer
// (unapplied) for up to a request timeout, so that the holder's next
// request on the lease follows it.
func (m *Machine[A]) Stop() {
	m.cancel()
	if m.inflight == nil {
		return
	}
	t := time.NewTimer(m.requestTimeout)
	defer t.Stop()
	for {
		select {
		case a := <-m.inflight:
			if a.Final() {
				m.inflight = nil
				return
			}
		case <-t.C:
			return
		}
	}
}
