package election

import (
	"context"
	"errors"
	"time"
)

// Sentinel errors. Lock implementations wrap them with %w so the elector can
// tell "someone else leads" and "our lease is definitely gone" from transient
// failures, which it always retries.
var (
	// ErrInvalidConfig is wrapped by every *ConfigError.
	ErrInvalidConfig = errors.New("election: invalid config")
	// ErrLockHeld: the lock is held by another contender (409 LeaseAlreadyPresent).
	ErrLockHeld = errors.New("election: lock held by another contender")
	// ErrLockLost: our lease is definitely gone (changed, broken, expired and
	// taken, or a lease-guarded write was refused). Never retried.
	ErrLockLost = errors.New("election: lease lost")
)

// Record is what the lock stores beside the lease: who holds it and the
// fencing term of the current (or last) leadership.
type Record struct {
	Holder   string
	Term     int64
	Acquired time.Time
}

// Lock is one lease on one shared object. Implementations must honour ctx
// deadlines on every call (the elector relies on it to keep its deadline),
// and classify errors with ErrLockHeld and ErrLockLost; anything else is
// treated as transient.
//
// A Lock is used by one Elector at a time; methods are not called concurrently.
type Lock interface {
	// Acquire takes the lease for d if nobody holds it (creating the
	// underlying object if missing). Returns an error wrapping ErrLockHeld if
	// another contender holds it.
	Acquire(ctx context.Context, d time.Duration) error
	// Renew extends the lease we hold. ErrLockLost if it is definitely gone.
	Renew(ctx context.Context) error
	// Release gives the lease up so another contender can take it at once.
	Release(ctx context.Context) error
	// Get reads the record, whoever holds the lease.
	Get(ctx context.Context) (Record, error)
	// Update writes the record, guarded by our lease: it fails with
	// ErrLockLost unless we still hold it.
	Update(ctx context.Context, r Record) error
	// Describe names the lock for logs, e.g. "blob leases/leader".
	Describe() string
}
