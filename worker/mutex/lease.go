package mutex

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/blobleader/blobleader/worker/election"
	"github.com/blobleader/blobleader/worker/election/bloblock"
	"github.com/blobleader/blobleader/worker/election/lease"
	"github.com/blobleader/blobleader/worker/internal/storagelog"
)

// Sentinel errors.
var (
	// ErrLocked: another lease holds the lock (a *LockedError names it).
	ErrLocked = errors.New("mutex: locked by another holder")
	// ErrNotHeld: there is no holding to renew or release — never taken,
	// released, expired, broken, or its blob deleted.
	ErrNotHeld = errors.New("mutex: lock does not exist")
	// ErrNotOwner: the lock is another holding's — another lease ID, or a
	// later term than the one the request was made for.
	ErrNotOwner = errors.New("mutex: lock belongs to another holding")
	// ErrLost: a *Held's holding ended without Unlock (deadline passed, or
	// storage said the lease is gone).
	ErrLost = errors.New("mutex: lock lost")
	// ErrUnlocked: a *Held's holding ended by Unlock.
	ErrUnlocked = errors.New("mutex: unlocked")
)

// LockedError says who holds a lock that could not be taken: Holder and
// Term as its record reads (empty and 0 when it could not be read, or the
// holder has not written its term yet). It matches ErrLocked.
type LockedError struct {
	Resource string
	Holder   string
	Term     int64
}

func (e *LockedError) Error() string {
	if e.Holder == "" {
		return fmt.Sprintf("mutex: %q is locked by another holder", e.Resource)
	}
	return fmt.Sprintf("mutex: %q is locked by %s (term %d)", e.Resource, e.Holder, e.Term)
}

// Is makes errors.Is(err, ErrLocked) true.
func (e *LockedError) Is(target error) bool { return target == ErrLocked }

// Locker hands out named locks on the resources of one container.
// It is safe for concurrent use.
type Locker struct {
	c   *container.Client
	cfg Config
	log *slog.Logger
	// lines rate-limits the storage_error lines of Lock's retries.
	lines storagelog.Limiter
}

// New returns a Locker on container c (bloblock.NewContainerClient: SDK
// retries off, every try bounded) after validating cfg.
func New(c *container.Client, cfg Config) (*Locker, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	l := &Locker{c: c, cfg: cfg, log: cfg.Logger}
	if l.log == nil {
		l.log = slog.Default()
	}
	return l, nil
}

// incurable reports whether err is an answer retrying cannot cure: a
// record an operator must repair, a resource id that names no lock, or
// storage refusing the request, what it writes or the credentials
// (lease.ErrDenied; a role assignment still propagating is not).
func incurable(err error) bool {
	return errors.Is(err, lease.ErrUnusableRecord) || errors.Is(err, ErrBadResourceID) || errors.Is(err, lease.ErrDenied)
}

// noteRetried logs a storage failure Lock retries, as the storage_error
// line (the first of each operation, status and code at once, then one per
// LeaseDuration); a failure after ctx ended says nothing about storage.
func (l *Locker) noteRetried(ctx context.Context, err error) {
	var se lease.StorageError
	if ctx.Err() != nil || !errors.As(err, &se) {
		return
	}
	op, status, code, message := se.StorageAnswer()
	if due, repeated := l.lines.Due(time.Now(), l.cfg.LeaseDuration, op, status, code); due {
		storagelog.Write(l.log, op, status, code, message, repeated)
	}
}

// Lease names one holding at storage: the resource, the lease ID every
// operation of the holding carries (a GUID), and the holder its record names.
type Lease struct {
	Resource string
	ID       string
	Owner    string
}

// Grant is a holding just granted: its term, and the send time of the
// acquire, from which its holder counts its deadline.
type Grant struct {
	Term int64
	Sent time.Time
}

// Status is one read of a resource's lock.
type Status struct {
	Resource string
	Locked   bool   // a lease holds it now (leased, or breaking)
	Holder   string // the last holding's holder; "" if none ever wrote
	Term     int64  // the last holding's term; 0 if none ever wrote
}

// blobLease is the storage lease of resource id's lock (BlobLease).
func (l *Locker) blobLease(id string) (*bloblock.Lock, error) {
	return BlobLease(l.c, l.cfg.Prefix, id)
}

// call runs one storage call under the request timeout.
func (l *Locker) call(ctx context.Context, op func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, l.cfg.RequestTimeout())
	defer cancel()
	return op(ctx)
}

// Acquire takes the lock of ls.Resource as lease ls.ID for d (whole
// seconds, 15s–60s) and writes the holding's term under it (the election's
// rule, election.NextTerm). A lock that is held — by another lease, or by
// ls.ID itself — is a *LockedError naming the holder as its record reads:
// as in Dapr's lock stores, the holder's second request is refused, and of
// concurrent acquires with one lease ID exactly one is granted (the term
// write is conditioned on the record read before the lease was taken). On
// any other error the lease, if it may have been granted, has been released
// again.
func (l *Locker) Acquire(ctx context.Context, ls Lease, d time.Duration) (Grant, error) {
	return l.acquire(ctx, ls, d, true)
}

// acquire is Acquire; readHolder says whether a refusal by storage reads who
// holds (a refusal found by the first read names the holder it read).
func (l *Locker) acquire(ctx context.Context, ls Lease, d time.Duration, readHolder bool) (Grant, error) {
	bl, err := l.blobLease(ls.Resource)
	if err != nil {
		return Grant{}, err
	}
	// 1. Read the lease state and the record: a held lock is refused here,
	// whoever holds it.
	v, err := l.inspect(ctx, bl)
	if err != nil {
		return Grant{}, err
	}
	if leased(v) {
		return Grant{}, lockedBy(ls.Resource, v.Record)
	}
	// 2. Take the lease.
	sent := time.Now()
	err = l.call(ctx, func(c context.Context) error { return bl.Acquire(c, ls.ID, d) })
	switch {
	case errors.Is(err, lease.ErrHeld):
		le := &LockedError{Resource: ls.Resource}
		if readHolder {
			if rec, err := l.get(ctx, bl); err == nil {
				le = lockedBy(ls.Resource, rec)
			}
		}
		return Grant{}, le
	case err != nil:
		l.giveUp(ctx, bl, ls.ID)
		return Grant{}, err
	}
	// 3. Write the term under the lease, on the record as read.
	term, err := l.stamp(ctx, bl, ls, v)
	switch {
	case errors.Is(err, errStampedMeanwhile):
		// Another holding with this lease ID wrote its term first: the lease
		// is its, not ours to release.
		return Grant{}, &LockedError{Resource: ls.Resource}
	case err != nil:
		if !errors.Is(err, lease.ErrLost) {
			l.giveUp(ctx, bl, ls.ID)
		}
		return Grant{}, err
	}
	return Grant{Term: term, Sent: sent}, nil
}

// lockedBy is the refusal naming the holder and term rec carries.
func lockedBy(resource string, rec lease.Record) *LockedError {
	le := &LockedError{Resource: resource}
	if rec.Holder != "" {
		le.Holder, le.Term = rec.Holder, rec.Term
	}
	return le
}

// errStampedMeanwhile: a term was written between the read the grant
// decided on and its own term write.
var errStampedMeanwhile = errors.New("mutex: a term was written since the lock was read")

// stamp writes the holding's term under its lease: the next term after the
// record read in v and the term floor (election.NextTerm), written only
// while the blob is still the version read (If-Match). No blob at the read:
// the acquire created it, and the term is written on the new, empty blob.
func (l *Locker) stamp(ctx context.Context, bl *bloblock.Lock, ls Lease, v lease.View) (int64, error) {
	if v.Version == "" {
		var err error
		if v, err = l.inspect(ctx, bl); err != nil {
			return 0, err
		}
		if v.Record.Holder != "" {
			return 0, errStampedMeanwhile
		}
	}
	term, err := election.NextTerm(v.Record.Term, 0, bl.TermFloor())
	if err != nil {
		return 0, err
	}
	next := lease.Record{Holder: ls.Owner, Term: term, Acquired: time.Now().UTC()}
	err = l.call(ctx, func(c context.Context) error { return bl.At(v.Version).Update(c, ls.ID, next) })
	if errors.Is(err, lease.ErrChanged) {
		return 0, errStampedMeanwhile
	}
	if err != nil {
		return 0, err
	}
	return term, nil
}

// leased reports whether a lease holds the lock as read in v: leased, or
// breaking (nobody can take it before the break period has passed).
func leased(v lease.View) bool { return v.State == lease.Leased || v.State == lease.Breaking }

// inspect reads the lease state and the record, under the request timeout.
func (l *Locker) inspect(ctx context.Context, bl heldLock) (v lease.View, err error) {
	err = l.call(ctx, func(c context.Context) (err error) { v, err = bl.Inspect(c); return err })
	return v, err
}

// get reads the record, under the request timeout.
func (l *Locker) get(ctx context.Context, bl *bloblock.Lock) (rec lease.Record, err error) {
	err = l.call(ctx, func(c context.Context) (err error) { rec, err = bl.Get(c); return err })
	return rec, err
}

// giveUp releases a lease that may have been granted with its answer lost,
// on a context of its own (ctx may be over): a no-op at storage if it was
// never granted; with the holding's own ID it can free nothing else.
func (l *Locker) giveUp(ctx context.Context, bl *bloblock.Lock, leaseID string) {
	_ = l.call(context.WithoutCancel(ctx), func(c context.Context) error { return bl.Release(c, leaseID) })
}

// Renew extends the lease of holding ls for the duration it was acquired
// with. With term ≠ 0 it acts only while the record still carries that term
// (a later holding by the same lease ID is refused with ErrNotOwner).
// ErrNotHeld: no lease to renew; ErrNotOwner: another holding's.
func (l *Locker) Renew(ctx context.Context, ls Lease, term int64) error {
	return l.leaseOp(ctx, ls, term, (*bloblock.Lock).Renew)
}

// Release gives the lease of holding ls up, so a waiter takes it at its next
// poll. With term ≠ 0 it acts only while the record still carries that
// term. ErrNotHeld: no lease to release; ErrNotOwner: another holding's.
func (l *Locker) Release(ctx context.Context, ls Lease, term int64) error {
	return l.leaseOp(ctx, ls, term, (*bloblock.Lock).Release)
}

func (l *Locker) leaseOp(ctx context.Context, ls Lease, term int64, op func(*bloblock.Lock, context.Context, string) error) error {
	bl, err := l.blobLease(ls.Resource)
	if err != nil {
		return err
	}
	v, err := l.heldState(ctx, bl, term)
	if err != nil {
		return err
	}
	if term != 0 {
		// 2. Refuse a term the record does not carry; 3. act only while the
		// record is as read (If-Match): a later holding's term write changes
		// it, lease operations do not.
		if v.Record.Holder == "" || v.Record.Term != term {
			return fmt.Errorf("%w: term %d, not %d", ErrNotOwner, v.Record.Term, term)
		}
		bl = bl.At(v.Version)
	}
	return leaseAnswer(l.call(ctx, func(c context.Context) error { return op(bl, c, ls.ID) }))
}

// heldState is the first step of a lease operation: read the lease state
// (and the record, which a request with term ≠ 0 needs). A lease that is
// not held — never taken, released, broken, or expired — does not exist,
// and is not revived (storage would renew or release an expired lease
// whose ID still matches): ErrNotHeld.
func (l *Locker) heldState(ctx context.Context, bl heldLock, term int64) (lease.View, error) {
	v, err := l.inspect(ctx, bl)
	if err != nil && (term != 0 || !errors.Is(err, lease.ErrUnusableRecord)) {
		return v, err // a term-less request needs only the state
	}
	if !leased(v) {
		return v, fmt.Errorf("%w: the lease is %s", ErrNotHeld, v.State)
	}
	return v, nil
}

// leaseAnswer turns a renew's or release's storage answer into ErrNotHeld or
// ErrNotOwner where storage was definite; anything else is returned as is.
func leaseAnswer(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, lease.ErrOtherLease), errors.Is(err, lease.ErrChanged):
		return fmt.Errorf("%w: %v", ErrNotOwner, err)
	case errors.Is(err, lease.ErrLost):
		return fmt.Errorf("%w: %v", ErrNotHeld, err)
	}
	return err
}

// Read reads who holds resource id, with its last holding's holder and term.
func (l *Locker) Read(ctx context.Context, id string) (Status, error) {
	bl, err := l.blobLease(id)
	if err != nil {
		return Status{}, err
	}
	v, err := l.inspect(ctx, bl)
	if err != nil {
		return Status{}, err
	}
	s := Status{Resource: id, Locked: leased(v)}
	if v.Record.Holder != "" {
		s.Holder, s.Term = v.Record.Holder, v.Record.Term
	}
	return s, nil
}
