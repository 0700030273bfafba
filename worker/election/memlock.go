package election

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// MemStore is an in-memory stand-in for one lease blob, shared by the MemLocks
// of several electors in one process. It follows Azure's lease semantics
// closely enough for unit tests: leases expire on the clock (time.Now, so a
// testing/synctest bubble controls it), an expired lease can still be renewed
// by its holder until someone else acquires, a broken lease cannot be renewed,
// and a lease-guarded write needs an unexpired lease.
type MemStore struct {
	mu      sync.Mutex
	nextID  int64
	leaseID int64 // 0: no lease ever, or released
	expires time.Time
	period  time.Duration // of the current lease, reused by renew
	broken  bool
	rec     Record
}

// NewMemStore returns an empty store: no lease, term 0.
func NewMemStore() *MemStore { return &MemStore{} }

// NewLock returns a lock handle on the store, one per elector.
func (s *MemStore) NewLock(name string) *MemLock { return &MemLock{s: s, name: name} }

// Break frees the lease at once, like an operator's BreakLease(0): the holder
// learns of it only at its next renew.
func (s *MemStore) Break() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.leaseID != 0 {
		s.broken = true
	}
}

// Record returns the stored record.
func (s *MemStore) Record() Record {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rec
}

// held reports whether a live lease exists; s.mu must be held.
func (s *MemStore) held(now time.Time) bool {
	return s.leaseID != 0 && !s.broken && now.Before(s.expires)
}

// MemLock is one elector's handle on a MemStore. Tests can make any call fail
// or hang with SetFault.
type MemLock struct {
	s    *MemStore
	name string

	mu    sync.Mutex
	mine  int64 // the lease ID this handle holds (or last held)
	fault func(ctx context.Context, op string) error
	calls map[string]int
}

// SetFault installs f, called at the start of every operation with its name
// ("acquire", "renew", "release", "get", "update"). A non-nil error is
// returned instead of performing the operation; f may block (until ctx ends)
// to model a hung request. nil removes the fault.
func (l *MemLock) SetFault(f func(ctx context.Context, op string) error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.fault = f
}

// Calls returns how many times op was called.
func (l *MemLock) Calls(op string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.calls[op]
}

func (l *MemLock) begin(ctx context.Context, op string) error {
	l.mu.Lock()
	if l.calls == nil {
		l.calls = map[string]int{}
	}
	l.calls[op]++
	f := l.fault
	l.mu.Unlock()
	if f != nil {
		if err := f(ctx, op); err != nil {
			return err
		}
	}
	return ctx.Err()
}

func (l *MemLock) Acquire(ctx context.Context, d time.Duration) error {
	if err := l.begin(ctx, "acquire"); err != nil {
		return err
	}
	s := l.s
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	mine := l.owned()
	if s.held(now) && s.leaseID != mine {
		return fmt.Errorf("memlock %s: %w", l.name, ErrLockHeld)
	}
	if s.leaseID == 0 || s.leaseID != mine || s.broken || !now.Before(s.expires) {
		// A new lease; as in Azure, acquiring a lease we still hold (same
		// lease ID) just extends it.
		s.nextID++
		s.leaseID = s.nextID
	}
	s.expires, s.period, s.broken = now.Add(d), d, false
	l.mu.Lock()
	l.mine = s.leaseID
	l.mu.Unlock()
	return nil
}

func (l *MemLock) owned() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.mine
}

func (l *MemLock) Renew(ctx context.Context) error {
	if err := l.begin(ctx, "renew"); err != nil {
		return err
	}
	s := l.s
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.leaseID != l.owned() || s.leaseID == 0:
		return fmt.Errorf("memlock %s: lease ID mismatch: %w", l.name, ErrLockLost)
	case s.broken:
		return fmt.Errorf("memlock %s: lease is broken: %w", l.name, ErrLockLost)
	}
	// As in Azure, an expired lease that nobody else took is still ours.
	s.expires = time.Now().Add(s.period)
	return nil
}

func (l *MemLock) Release(ctx context.Context) error {
	if err := l.begin(ctx, "release"); err != nil {
		return err
	}
	s := l.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.leaseID != l.owned() || s.leaseID == 0 {
		return fmt.Errorf("memlock %s: release of a lease not held: %w", l.name, ErrLockLost)
	}
	s.leaseID, s.broken = 0, false
	return nil
}

func (l *MemLock) Get(ctx context.Context) (Record, error) {
	if err := l.begin(ctx, "get"); err != nil {
		return Record{}, err
	}
	return l.s.Record(), nil
}

func (l *MemLock) Update(ctx context.Context, r Record) error {
	if err := l.begin(ctx, "update"); err != nil {
		return err
	}
	s := l.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.leaseID != l.owned() || !s.held(time.Now()) {
		return fmt.Errorf("memlock %s: write without a live lease: %w", l.name, ErrLockLost)
	}
	s.rec = r
	return nil
}

func (l *MemLock) Describe() string { return "memory " + l.name }
