// Package faultinject is an HTTP transport for storage tests that sits
// between the Azure SDK and a real storage service (Azurite) and spoils
// chosen requests the way a network does. Every other request reaches
// storage unchanged, and what storage applied stays applied: it is a fault
// injector, not a mock.
//
// Requests are told apart by their operation name (storage.WithOp), and a
// rule picks the Nth request of one operation.
package faultinject

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/blobleader/blobleader/worker/storage"
)

// Mode is how a picked request is spoiled.
type Mode int

const (
	// FailBeforeSend: the request never reaches storage (connection refused).
	FailBeforeSend Mode = iota
	// LoseResponse: storage applies the request; the answer is lost.
	LoseResponse
	// DeliverLate: the caller gets an error at once; the request is held and
	// reaches storage just before the next request of the same operation
	// (an in-flight write that lands after its sender gave up on it).
	DeliverLate
)

func (m Mode) String() string {
	return [...]string{"fail before send", "lose response", "deliver late"}[m]
}

// ErrInjected is wrapped by every error the injector returns in place of an
// answer.
var ErrInjected = errors.New("faultinject: injected fault")

type rule struct {
	op   string
	nth  int // 1-based count of requests of op
	mode Mode
}

// Injector is a policy.Transporter (and http.RoundTripper-like Do) that
// forwards requests to storage over a real HTTP client.
type Injector struct {
	hc *http.Client

	mu    sync.Mutex
	rules []rule
	seen  map[string]int
	hits  []string      // "op#n mode", for failure messages
	held  *http.Request // a DeliverLate request waiting for the next of its op
	heldN string
}

// New returns an injector with no rules: every request goes through.
func New() *Injector {
	return &Injector{hc: &http.Client{Timeout: 10 * time.Second}, seen: map[string]int{}}
}

// Arm spoils the nth next request of op (counted from now) in mode.
func (f *Injector) Arm(op string, nth int, mode Mode) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rules = append(f.rules, rule{op: op, nth: f.seen[op] + nth, mode: mode})
}

// Hits reports the faults injected so far, as "op#n mode".
func (f *Injector) Hits() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.hits...)
}

// Seen reports how many requests of op have been sent through so far.
func (f *Injector) Seen(op string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.seen[op]
}

// Do sends req to storage, unless a rule picks it.
func (f *Injector) Do(req *http.Request) (*http.Response, error) {
	op := storage.Op(req.Context())
	f.mu.Lock()
	f.seen[op]++
	n := f.seen[op]
	var r *rule
	for i := range f.rules {
		if f.rules[i].op == op && f.rules[i].nth == n {
			r = &f.rules[i]
		}
	}
	late := f.held
	if late != nil && storage.Op(late.Context()) != op {
		late = nil
	}
	if late != nil {
		f.held = nil
	}
	if r != nil {
		f.hits = append(f.hits, fmt.Sprintf("%s#%d %s", op, n, r.mode))
	}
	f.mu.Unlock()

	if late != nil {
		resp, err := f.hc.Do(late)
		if err != nil {
			return nil, fmt.Errorf("deliver the held %s: %w", f.heldN, err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	if r == nil {
		return f.hc.Do(req)
	}
	switch r.mode {
	case FailBeforeSend:
		return nil, fmt.Errorf("%w: %s #%d never sent", ErrInjected, op, n)
	case LoseResponse:
		resp, err := f.hc.Do(req)
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		return nil, fmt.Errorf("%w: %s #%d sent, answer lost", ErrInjected, op, n)
	default: // DeliverLate
		// Detached from the caller's context: the sender has given up, the
		// network has not.
		held := req.Clone(storage.WithOp(context.Background(), op))
		if req.Body != nil {
			body, err := io.ReadAll(req.Body)
			if err != nil {
				return nil, err
			}
			held.Body = io.NopCloser(bytes.NewReader(body))
		}
		f.mu.Lock()
		f.held, f.heldN = held, fmt.Sprintf("%s #%d", op, n)
		f.mu.Unlock()
		return nil, fmt.Errorf("%w: %s #%d timed out (held in flight)", ErrInjected, op, n)
	}
}
