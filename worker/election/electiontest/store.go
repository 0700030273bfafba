// Package electiontest keeps a lock in memory for tests of code built on
// package election, as net/http/httptest does for HTTP: a Store stands in
// for one lease blob, and each elector gets its own Lock on it (Store.NewLock),
// which implements lease.Lock and lease.Breaker. Tests can make any call fail
// or hang (Lock.SetFault), count calls, and act on the store as an operator
// would (Break, BreakFor, Delete, SetRecord).
package electiontest

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/blobleader/blobleader/worker/election/lease"
)

// Store is an in-memory stand-in for one lease blob, shared by the Locks
// of several electors in one process. It follows Azure's lease semantics
// closely enough for unit tests: leases expire on the clock (time.Now, so a
// testing/synctest bubble controls it), an expired lease can still be renewed
// by its holder until someone else acquires, a broken lease cannot be renewed,
// a lease-guarded write needs an unexpired lease, and every lease operation
// names its lease ID (acquiring with the ID already held extends the lease).
type Store struct {
	mu      sync.Mutex
	leaseID string // "": no lease ever, released, or deleted
	expires time.Time
	period  time.Duration // of the current lease, reused by renew
	broken  bool
	// breakEnds: a break with a period is under way and ends then (zero:
	// none); see BreakFor in break.go.
	breakEnds time.Time
	rec       lease.Record
	// version counts the writes of rec (lease.View.Version): every record
	// write changes it, as a write changes a blob's ETag; lease operations
	// do not.
	version int64
}

// NewStore returns an empty store: no lease, term 0.
func NewStore() *Store { return &Store{} }

// NewLock returns a lock handle on the store, one per elector.
func (s *Store) NewLock(name string) *Lock { return &Lock{s: s, name: name} }

// Break frees the lease at once, like an operator's BreakLease(0): the holder
// learns of it only at its next renew.
func (s *Store) Break() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.leaseID != "" {
		s.broken = true
	}
}

// Delete removes the lease and the record, as an operator deleting the lock
// blob or its container does.
func (s *Store) Delete() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.leaseID, s.broken, s.breakEnds, s.rec = "", false, time.Time{}, lease.Record{}
	s.version++
}

// SetRecord overwrites the record, as an operator writing the lock's
// metadata by hand does (after breaking the lease the write needs).
func (s *Store) SetRecord(r lease.Record) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.leaseID != "" {
		s.broken = true
	}
	s.rec = r
	s.version++
}

// Record returns the stored record.
func (s *Store) Record() lease.Record {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rec
}

// held reports whether a live lease exists; s.mu must be held.
func (s *Store) held(now time.Time) bool {
	return s.leaseID != "" && !s.broken && now.Before(s.expires) && !s.breakOver(now)
}

// Lock is one elector's handle on a Store. Tests can make any call fail
// or hang with SetFault.
type Lock struct {
	s    *Store
	name string

	mu     sync.Mutex
	fault  func(ctx context.Context, op string) error
	calls  map[string]int
	lastID map[string]string // the lease ID of each operation's last call
}

// SetFault installs f, called at the start of every operation with its name
// ("acquire", "renew", "release", "get", "update"). A non-nil error is
// returned instead of performing the operation; f may block (until ctx ends)
// to model a hung request. nil removes the fault.
func (l *Lock) SetFault(f func(ctx context.Context, op string) error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.fault = f
}

// LastLeaseID returns the lease ID the last call of op named (tests use it
// to deliver a captured request late).
func (l *Lock) LastLeaseID(op string) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lastID[op]
}

// Calls returns how many times op was called.
func (l *Lock) Calls(op string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.calls[op]
}

func (l *Lock) begin(ctx context.Context, op, leaseID string) error {
	l.mu.Lock()
	if l.calls == nil {
		l.calls, l.lastID = map[string]int{}, map[string]string{}
	}
	l.calls[op]++
	l.lastID[op] = leaseID
	f := l.fault
	l.mu.Unlock()
	if f != nil {
		if err := f(ctx, op); err != nil {
			return err
		}
	}
	return ctx.Err()
}

func (l *Lock) Acquire(ctx context.Context, leaseID string, d time.Duration) error {
	if err := l.begin(ctx, "acquire", leaseID); err != nil {
		return err
	}
	s := l.s
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	if s.held(now) && s.leaseID != leaseID {
		return fmt.Errorf("electiontest %s: %w", l.name, lease.ErrHeld)
	}
	// A new lease, or (as in Azure) the same lease ID extending its own.
	s.leaseID, s.expires, s.period, s.broken, s.breakEnds = leaseID, now.Add(d), d, false, time.Time{}
	return nil
}

func (l *Lock) Renew(ctx context.Context, leaseID string) error {
	if err := l.begin(ctx, "renew", leaseID); err != nil {
		return err
	}
	s := l.s
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.leaseID == "":
		return fmt.Errorf("electiontest %s: no lease: %w", l.name, lease.ErrLost)
	case s.leaseID != leaseID:
		return fmt.Errorf("electiontest %s: lease ID mismatch: %w", l.name, lease.ErrLost)
	case s.broken || !s.breakEnds.IsZero():
		return fmt.Errorf("electiontest %s: lease is broken or breaking: %w", l.name, lease.ErrLost)
	}
	// As in Azure, an expired lease that nobody else took is still ours.
	s.expires = time.Now().Add(s.period)
	return nil
}

func (l *Lock) Release(ctx context.Context, leaseID string) error {
	if err := l.begin(ctx, "release", leaseID); err != nil {
		return err
	}
	s := l.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.leaseID != leaseID || s.leaseID == "" {
		return fmt.Errorf("electiontest %s: release of a lease not held: %w", l.name, lease.ErrLost)
	}
	s.leaseID, s.broken, s.breakEnds = "", false, time.Time{}
	return nil
}

// Get reads the record; like bloblock's, a term that cannot give the next
// one comes back with an error wrapping ErrUnusableRecord.
func (l *Lock) Get(ctx context.Context) (lease.Record, error) {
	if err := l.begin(ctx, "get", ""); err != nil {
		return lease.Record{}, err
	}
	r := l.s.Record()
	return r, unusableTerm(r.Term)
}

// unusableTerm is ErrUnusableRecord for a stored term that cannot give the
// next one (negative, or lease.MaxTerm or more), nil otherwise.
func unusableTerm(t int64) error {
	if t < 0 || t >= lease.MaxTerm {
		return fmt.Errorf("%w: term %d cannot grow (negative, or the next would pass %d, the highest term)", lease.ErrUnusableRecord, t, int64(lease.MaxTerm))
	}
	return nil
}

func (l *Lock) Update(ctx context.Context, leaseID string, r lease.Record) error {
	if err := l.begin(ctx, "update", leaseID); err != nil {
		return err
	}
	s := l.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.leaseID != leaseID || !s.held(time.Now()) {
		return fmt.Errorf("electiontest %s: write without a live lease: %w", l.name, lease.ErrLost)
	}
	s.rec = r
	s.version++
	return nil
}

func (l *Lock) Describe() string { return "memory " + l.name }

// TermFloor is 0: an in-memory store never goes back in time, so terms count
// leaderships (which unit tests assert exactly).
func (l *Lock) TermFloor() int64 { return 0 }
