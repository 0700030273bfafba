package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"
)

// KindSlowIdentity: the managed-identity endpoint is slow to deliver a first
// token (ACI's is known to be), longer than one storage request's timeout.
const KindSlowIdentity Kind = "slow_identity"

// SlowIdentity is a managed-identity endpoint a worker reaches through
// IDENTITY_ENDPOINT and IDENTITY_HEADER (the protocol azidentity's
// ManagedIdentityCredential speaks when they are set). Injected, it is cold:
// until it has delivered one token every answer takes Delay, and a caller
// that gives up earlier gets nothing. Removed, it answers at once. Serve it
// with net/http (it is an http.Handler).
type SlowIdentity struct {
	Delay    int64  `json:"delay"`    // milliseconds a cold endpoint takes to answer
	Lifetime int64  `json:"lifetime"` // seconds a token lives; default 3600
	Worker   string `json:"worker"`   // the worker whose endpoint this is

	// Header is the secret a caller must send as X-IDENTITY-HEADER.
	Header string `json:"-"`

	place
	cold      bool
	delivered int
}

var (
	_ Fault        = (*SlowIdentity)(nil)
	_ http.Handler = (*SlowIdentity)(nil)
)

func (f *SlowIdentity) Kind() Kind     { return KindSlowIdentity }
func (f *SlowIdentity) Target() string { return f.Worker }

// Inject makes the endpoint cold: no token delivered yet, each answer Delay.
func (f *SlowIdentity) Inject(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if f.Delay <= 0 {
		return fmt.Errorf("%w: slow identity delay %d ms must be > 0", ErrInvalid, f.Delay)
	}
	return f.putIn("", func() error {
		f.cold, f.delivered = true, 0
		return nil
	})
}

// Remove makes the endpoint answer at once again.
func (f *SlowIdentity) Remove(ctx context.Context) error {
	_ = f.takeOut(func() error { f.cold = false; return nil })
	return ctx.Err()
}

// Delivered is how many tokens the endpoint has handed out since Inject.
func (f *SlowIdentity) Delivered() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.delivered
}

func (f *SlowIdentity) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if f.Header != "" && r.Header.Get("X-IDENTITY-HEADER") != f.Header {
		http.Error(w, "missing or wrong X-IDENTITY-HEADER", http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	wait := time.Duration(0)
	if f.cold {
		wait = time.Duration(f.Delay) * time.Millisecond
	}
	f.mu.Unlock()
	if wait > 0 {
		t := time.NewTimer(wait)
		defer t.Stop()
		select {
		case <-r.Context().Done():
			return // the caller gave up: nothing delivered
		case <-t.C:
		}
	}
	f.mu.Lock()
	f.cold = false
	f.delivered++
	f.mu.Unlock()
	life := f.Lifetime
	if life <= 0 {
		life = 3600
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"access_token": "slow-identity-token", "expires_in": life, "token_type": "Bearer",
		"resource": r.URL.Query().Get("resource"), "client_id": r.URL.Query().Get("client_id"),
	})
}
