package mutex

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/google/uuid"
)

// Held is one holding of a named lock, renewed in the background until
// Unlock or until it is lost. Its methods are safe for concurrent use.
type Held struct {
	l     *Locker
	lock  heldLock // the storage lease of the holding's resource
	lease Lease
	term  int64

	mu       sync.Mutex
	deadline time.Time // the send of the last successful renew (or the acquire) + RenewDeadline
	err      error     // why the holding ended; nil while it lasts

	done   chan struct{} // closed when the holding ends
	stop   chan struct{} // closed by Unlock
	exited chan struct{} // closed when the renew loop has returned
}

// TryLock makes one attempt to take the lock of resource id: a *LockedError
// (matching ErrLocked) names the holder when another holds it.
func (l *Locker) TryLock(ctx context.Context, id string) (*Held, error) {
	ls := Lease{Resource: id, ID: uuid.NewString(), Owner: l.cfg.Owner}
	g, err := l.acquire(ctx, ls, l.cfg.LeaseDuration, true)
	if err != nil {
		return nil, err
	}
	return l.hold(ctx, ls, g)
}

// Lock waits until it holds the lock of resource id, polling every
// RetryPeriod (jittered ±10%), or until ctx ends (then ctx's error). A
// transient storage error is retried at the next poll, like a held lock,
// and logged (Config.Logger, rate-limited); an answer that retrying cannot
// cure — storage refusing the credentials (400, 401, 403 but a role
// assignment still propagating), a record an operator must repair — ends
// the wait and is returned.
func (l *Locker) Lock(ctx context.Context, id string) (*Held, error) {
	if _, err := l.blobLease(id); err != nil {
		return nil, err
	}
	for {
		ls := Lease{Resource: id, ID: uuid.NewString(), Owner: l.cfg.Owner}
		g, err := l.acquire(ctx, ls, l.cfg.LeaseDuration, false)
		if err == nil {
			if h, err := l.hold(ctx, ls, g); err == nil {
				return h, nil
			}
			// Slow storage ate the whole deadline: try again.
		}
		if incurable(err) {
			return nil, err // waiting will not help
		}
		if err != nil && !errors.Is(err, ErrLocked) {
			l.noteRetried(ctx, err)
		}
		t := time.NewTimer(l.cfg.JitteredRetryPeriod())
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
	}
}

// errSlowGrant: the acquire and the term write took longer than the
// holding's deadline, which had passed before it could be handed out.
var errSlowGrant = errors.New("mutex: renew deadline passed while acquiring")

// hold starts the renewals of a holding just granted on the lock of
// ls.Resource.
func (l *Locker) hold(ctx context.Context, ls Lease, g Grant) (*Held, error) {
	bl, err := l.blobLease(ls.Resource)
	if err != nil {
		return nil, err
	}
	return l.holdOn(ctx, bl, ls, g)
}

// holdOn starts the renewals of a holding just granted on lock lk, unless
// its deadline passed while it was being granted (then it is released).
func (l *Locker) holdOn(ctx context.Context, lk heldLock, ls Lease, g Grant) (*Held, error) {
	h := &Held{
		l: l, lock: lk, lease: ls, term: g.Term,
		deadline: g.Sent.Add(l.cfg.RenewDeadline),
		done:     make(chan struct{}), stop: make(chan struct{}), exited: make(chan struct{}),
	}
	if !time.Now().Before(h.deadline) {
		_ = h.release(context.WithoutCancel(ctx))
		return nil, errSlowGrant
	}
	go h.renewLoop()
	return h, nil
}

// Resource is the id this lock is on.
func (h *Held) Resource() string { return h.lease.Resource }

// Term is the holding's fencing term: pass it to every side effect.
func (h *Held) Term() int64 { return h.term }

// Done is closed when the holding ends: lost, or unlocked.
func (h *Held) Done() <-chan struct{} { return h.done }

// Err is nil while the holding lasts, then ErrLost (wrapping why) or
// ErrUnlocked.
func (h *Held) Err() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.err
}

// Valid reports whether the holding lasts right now: not ended, and
// ValidUntil not passed (judged at the moment of asking, so a process
// resumed after a pause does not believe a lapsed holding).
func (h *Held) Valid() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.err == nil && time.Now().Before(h.deadline)
}

// ValidUntil is the holding's deadline as known now: the send of its last
// successful renew (or of its acquire) + RenewDeadline.
func (h *Held) ValidUntil() time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.deadline
}

// Context returns a context derived from parent that is cancelled the
// moment the holding ends, with why as its cause (context.Cause): ErrLost
// (wrapping the reason) or ErrUnlocked.
func (h *Held) Context(parent context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(parent)
	go func() {
		select {
		case <-h.done:
			cancel(h.Err())
		case <-ctx.Done():
		}
	}()
	return ctx, func() { cancel(context.Canceled) }
}

// Unlock ends the holding — Done is closed at once, before any request —
// then stops the renewals and releases the lease with the holding's own
// lease ID, so a waiter takes it at its next poll. It returns the release's
// error (the lease then expires on its own), or the reason the holding had
// already ended before Unlock. Later calls return ErrUnlocked.
func (h *Held) Unlock(ctx context.Context) error {
	if !h.end(ErrUnlocked) {
		<-h.exited
		if err := h.Err(); !errors.Is(err, ErrUnlocked) {
			return err
		}
		return ErrUnlocked
	}
	close(h.stop)
	<-h.exited
	err := h.release(ctx)
	if errors.Is(err, ErrNotHeld) {
		return nil // expired or broken in between: nothing left to free
	}
	return err
}

// end ends the holding with err unless it has ended already; it reports
// whether this call ended it.
func (h *Held) end(err error) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.err != nil {
		return false
	}
	h.err = err
	close(h.done)
	return true
}
