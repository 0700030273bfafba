package chaos

import (
	"context"
	"fmt"
	"time"
)

// Refusal makes storage answer chosen requests of one worker with an error
// instead of applying them: what a worker meets when storage answers but
// never as expected — an Azurite started without --skipApiVersionCheck
// (400 InvalidHeaderValue for every request: the SDK's API version is newer
// than Azurite's), a missing role assignment (403
// AuthorizationPermissionMismatch), a throttled account (503 ServerBusy).
// The answer is worded as storage words one: the status, the
// x-ms-error-code header and an XML body with Code and Message. Nothing
// reaches storage while a request is refused.
type Refusal struct {
	Op      Op     `json:"op"`      // the operation: acquire, renew, release, break, change, metadata, append, other or *
	Status  int    `json:"status"`  // the HTTP status of the answer, 400..599
	Code    string `json:"code"`    // the storage error code, e.g. InvalidHeaderValue
	Message string `json:"message"` // the service's message; "" = one naming the fault
	Count   int    `json:"count"`   // how many requests to refuse; 0 = every matching one while injected

	Proxy *HTTPProxy `json:"-"`

	state   intercept
	refused []Refused // guarded by state.mu
}

// Refused is one request Refusal answered.
type Refused struct {
	Op     Op        `json:"op"`
	At     time.Time `json:"at"`
	Status int       `json:"status"`
}

var _ Fault = (*Refusal)(nil)

func (f *Refusal) SetHTTPProxy(p *HTTPProxy) { f.Proxy = p }

func (f *Refusal) Kind() Kind     { return KindRefusal }
func (f *Refusal) Target() string { return httpTargetOf(f.Proxy) }

func (f *Refusal) Inject(ctx context.Context) error {
	if err := f.Op.validate(); err != nil {
		return err
	}
	if f.Status < 400 || f.Status > 599 {
		return fmt.Errorf("%w: status %d (want an HTTP error status 400..599)", ErrInvalid, f.Status)
	}
	if f.Code == "" {
		return fmt.Errorf("%w: code is empty (want a storage error code, e.g. InvalidHeaderValue)", ErrInvalid)
	}
	if f.Count < 0 {
		return fmt.Errorf("%w: count %d (want ≥ 0; 0 = every matching request)", ErrInvalid, f.Count)
	}
	return f.state.inject(ctx, f.Proxy, KindRefusal, f)
}

// Remove stops refusing; nothing is in flight.
func (f *Refusal) Remove(ctx context.Context) error { return f.state.remove(ctx, f) }

// Refused lists the requests refused so far.
func (f *Refusal) Refused() []Refused {
	f.state.mu.Lock()
	defer f.state.mu.Unlock()
	return append([]Refused(nil), f.refused...)
}

// AwaitRefused waits until n requests have been refused and returns them.
func (f *Refusal) AwaitRefused(ctx context.Context, n int) ([]Refused, error) {
	err := f.state.await(ctx, n, func() int { return len(f.refused) })
	return f.Refused(), err
}

func (f *Refusal) hold(Op) (time.Duration, func(Delivery), bool) { return 0, nil, false }
func (f *Refusal) drop(Op, int) bool                             { return false }

func (f *Refusal) answer(op Op) (errorAnswer, bool) {
	f.state.mu.Lock()
	defer f.state.mu.Unlock()
	if !f.Op.matches(op) || !f.state.take(f.Count) {
		return errorAnswer{}, false
	}
	f.refused = append(f.refused, Refused{Op: op, At: time.Now(), Status: f.Status})
	f.state.notify()
	msg := f.Message
	if msg == "" {
		msg = fmt.Sprintf("chaos: refusal of %s requests (%d %s)", f.Op, f.Status, f.Code)
	}
	return errorAnswer{Status: f.Status, Code: f.Code, Message: msg}, true
}
