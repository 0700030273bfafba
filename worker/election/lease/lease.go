// Package lease is the contract between the elector (package election) and
// a lock backend: a Lock is one lease on one shared object with a Record
// beside it, and a Breaker can also read the lease's state and break it
// (early takeover). Package bloblock implements both on an Azure blob;
// package electiontest keeps one in memory for tests. A new backend
// implements Lock (and Breaker, for early takeover) and classifies its
// errors with the sentinels below.
package lease

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Sentinel errors. Lock implementations wrap them with %w so the elector can
// tell "someone else leads", "our lease is definitely gone" and "storage
// refuses this request" from transient failures, which it always retries.
// Their texts keep the prefix "election:": they reach logs and /status.
var (
	// ErrHeld: the lock is held by another contender (409 LeaseAlreadyPresent).
	ErrHeld = errors.New("election: lock held by another contender")
	// ErrLost: our lease is definitely gone (changed, broken, expired and
	// taken, deleted with its blob or container, or a lease-guarded write was
	// refused). Never retried.
	ErrLost = errors.New("election: lease lost")
	// ErrRejected: storage refused the request for a reason retrying will not
	// fix by itself (a 4xx that is not a lease answer, e.g. metadata it cannot
	// carry). The elector keeps contending but reports it in Healthy and Ready.
	ErrRejected = errors.New("election: storage rejected the request")
	// ErrUnusableRecord: the lock's record cannot give the next term — its
	// term is not a non-negative integer (an operator's typo), or it is
	// MaxTerm or more and cannot grow. Retrying will not fix it;
	// an operator must. The elector leaves the record untouched, keeps
	// contending, and reports it in Healthy, Ready and Status.
	ErrUnusableRecord = errors.New("election: lock record unusable")
)

// Finer answers, for callers that need more than the elector does (package
// mutex tells "another holding has it" from "nobody has it"). A backend
// that can tell them apart wraps these; the first two also match ErrLost,
// so the elector's handling is the same.
var (
	// ErrOtherLease: the object is leased under another lease ID (409
	// LeaseIdMismatchWithLeaseOperation): our lease is gone and another
	// holding has it. Matches ErrLost.
	ErrOtherLease = fmt.Errorf("%w: leased under another lease ID", ErrLost)
	// ErrChanged: the record is no longer the version a request was made
	// At (412 on a conditioned renew, release or write): a later write —
	// another holding's term above all — came between the read and the
	// request. Matches ErrLost.
	ErrChanged = fmt.Errorf("%w: record changed since it was read", ErrLost)
	// ErrDenied: storage refused the caller or the request itself — bad
	// credentials (401, 403), a malformed request (400), or a write it will
	// not take (ErrRejected) — and retrying the same request will not cure
	// it. A 403 AuthorizationPermissionMismatch (a role assignment still
	// propagating, which heals within minutes) is not ErrDenied.
	ErrDenied = errors.New("election: storage denied the request")
)

// MaxTerm is the highest term any leadership may hold: 2^53 − 1, the largest
// integer every JSON reader compares exactly (JavaScript's
// Number.MAX_SAFE_INTEGER, jq before 1.7). Terms are JSON numbers wherever
// they leave the process — /status, the history, the ledger, the lock API —
// and a fencing token that two readers round to the same number fences
// nothing. A record whose term is MaxTerm or more cannot give a next term:
// it is unusable (ErrUnusableRecord) and an operator repairs it.
//
// The headroom above it, about 9.2·10^18 terms of the int64 range, is never
// used, so no arithmetic on a usable term (a next term, a floor + 1, a
// version above every term) can overflow; and terms start at the term floor,
// the wall-clock millisecond (about 1.8·10^12 today), from which MaxTerm is
// 285,000 years of milliseconds away. Only a term written by hand gets near
// it.
const MaxTerm = 1<<53 - 1

// StorageError is implemented by a Lock's errors that carry storage's
// answer to one call (bloblock.Error does). The elector reports every
// answer it did not expect (docs/architecture.md#the-election, "Expected
// answers"): an error that does not implement it is not storage's (a gate
// in front of the lock) and is not reported.
type StorageError interface {
	error
	// StorageAnswer returns the operation, the HTTP status (0 when no
	// answer came back), the storage error code ("timeout" or "error" when
	// no answer came back) and the service's message (or why no answer
	// came). None of them may carry a secret.
	StorageAnswer() (op string, status int, code, message string)
}

// Record is what the lock stores beside the lease: who holds it and the
// fencing term of the current (or last) leadership.
type Record struct {
	Holder   string
	Term     int64
	Acquired time.Time
	// Mode is the holder's election.Config.Mode, and Process names the
	// process that wrote the record (host, pid and start): with them a
	// follower tells a contender of another mode, and another process under
	// its own identity, from itself. Empty when the writer did not say.
	Mode    string
	Process string
	// The early-takeover contract (see Breaker), written by a leader with
	// early takeover on (from its term write, heartbeat 0), zero otherwise:
	// Heartbeat counts its heartbeat writes, BeatEvery is the longest it
	// goes between two of them while healthy, StopAfterWrite how long after
	// the send of a write of its record that landed everything it started
	// has stopped.
	Heartbeat      int64
	BeatEvery      time.Duration
	StopAfterWrite time.Duration
}

// Lock is one lease on one shared object. Implementations must honour ctx
// deadlines on every call (the elector relies on it to keep its deadline),
// and classify errors with ErrHeld, ErrLost and ErrRejected; anything else
// is treated as transient.
//
// Every lease operation names the lease it acts on by leaseID. The elector
// picks a fresh ID for each leadership and keeps it while it retries an
// acquire whose answer was lost, so a request sent for one leadership (a late
// renew, a late release) can never act on a later one, and a lost acquire
// answer never leaves a ghost lease. IDs are GUID strings, as Azure requires.
//
// A Lock is used by one elector at a time; methods are not called
// concurrently, except that with early takeover a leadership's Renew and
// its heartbeat's Update are in flight side by side.
type Lock interface {
	// Acquire takes the lease as leaseID for d if nobody else holds it
	// (creating the underlying object if missing); acquiring a lease already
	// held as leaseID extends it. Returns an error wrapping ErrHeld if
	// another lease ID holds it.
	Acquire(ctx context.Context, leaseID string, d time.Duration) error
	// Renew extends the lease held as leaseID. ErrLost if it is
	// definitely gone (including when the object was deleted).
	Renew(ctx context.Context, leaseID string) error
	// Release gives the lease held as leaseID up so another contender can
	// take it at once. It never affects a lease held under another ID.
	Release(ctx context.Context, leaseID string) error
	// Get reads the record, whoever holds the lease. When there is no record
	// (first use, or the object was deleted) it returns a Record whose Term is
	// the lock's term floor: the next leadership's term will be above it.
	Get(ctx context.Context) (Record, error)
	// Update writes the record, guarded by the lease held as leaseID: it
	// fails with ErrLost unless that lease still holds the object.
	Update(ctx context.Context, leaseID string, r Record) error
	// Describe names the lock for logs, e.g. "blob leases/leader".
	Describe() string
	// TermFloor is a term every new leadership's term must be above,
	// whatever the record says: the record itself can go back in time
	// (storage restored, or failed over to an older copy). bloblock returns
	// the wall-clock millisecond (see package election, "Non-guarantees");
	// 0 means no floor beyond the record.
	TermFloor() int64
}
