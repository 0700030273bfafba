// Package mutex is a named lock on a resource id — "only one worker touches
// customer 42's account at a time" for thousands of ids — on Azure Blob
// Storage leases, fenced by a term per resource.
//
// Each resource id maps to one lease blob under a prefix in the container
// (BlobName: the SHA-256 of the id, the id itself kept in the blob's
// metadata and checked on every read). A holding is a lease on that blob
// plus a term written under the lease, by the election's rule
// (election.NextTerm): above the stored term and above the wall-clock
// millisecond, so terms per resource strictly increase, also after the blob
// or its container was deleted.
//
// Words, each with one meaning here: a lock is the named lock of one
// resource id; Lock and TryLock take it, Unlock gives it back, and
// "locked" (ErrLocked, Status.Locked) says a lease holds it. Its lease is
// storage's lease on the lock's blob (BlobName, BlobLease). A holding is
// one tenure of that lease, from its grant to its end: a *Held, or the
// Lease that stateless operations name.
//
// Two ways to use it:
//
//   - A held lock (TryLock, Lock → *Held): the lease is renewed in the
//     background under the elector's deadline rule, and the holding ends —
//     Done closed, Err ErrLost — the moment RenewDeadline has passed since
//     the send of its last successful renew (or of its acquire), or at once
//     when storage says the lease is gone.
//   - Stateless operations (Acquire, Renew, Release, Read on a Lease): the
//     caller names the lease ID (any process can renew or release a holding
//     another granted) and keeps its own deadline; `blobleader locks`
//     serves them over HTTP.
//
// # Guarantees
//
//   - A holder of a *Held believes it holds only until the send time of its
//     last successful renew (or of its acquire) + RenewDeadline, measured on
//     the monotonic clock. Storage grants the lease no earlier than that
//     send and for LeaseDuration > RenewDeadline + election.SafetyMargin,
//     so the holding ends before storage could grant the lock to anyone
//     else, provided the clock rates of the holder and storage differ by
//     less than SafetyMargin/LeaseDuration.
//   - Terms of one resource strictly increase across holdings and are
//     written under the lease that grants them, whatever the clocks, while
//     the blob lives.
//   - A request made for one holding never acts on another holder's: every
//     lease operation carries its holding's lease ID. A renew or release
//     given the term it was made for (Renew, Release with term ≠ 0) is also
//     refused once the same holder took the lock again (a later term): it is
//     conditioned on the record it read (If-Match).
//   - Acquire refuses a held lock whoever holds it, its own lease ID
//     included (a second request by the same holder fails, as in Dapr's
//     lock stores); of concurrent Acquires with one lease ID exactly one is
//     granted: the term write is conditioned on the record read before the
//     lease was taken.
//   - Nothing is retried blindly: an acquire whose answer was lost is
//     released with its own lease ID before TryLock or Lock returns an error.
//
// # Non-guarantees
//
//   - Belief is not action: a side effect started just before the deadline
//     may land after it. Pass Term to every side effect and let its storage
//     refuse a lower term (worker/ledger does).
//   - A Release or Renew without a term cannot tell two holdings of the same
//     lease ID apart: a late term-less release from an ended holding of the
//     same owner frees that owner's later holding. Callers that reuse a
//     lease ID (the HTTP service derives it from the owner) pass the term.
//   - Locks are not fair and not reentrant: Lock polls every RetryPeriod
//     (jittered), and any waiter may win a free lease; a second TryLock by
//     the same Locker on a held id fails like anyone else's.
//   - After the blob or its container is deleted, the next term is the
//     granting process's wall-clock millisecond + 1 (the term floor): above
//     the earlier terms only if that clock reads later than the last term
//     written before the deletion — clocks that differ by less than the
//     time between the last grant before the deletion and the first after
//     (worker/election/doc.go "Non-guarantees" states the same assumption).
//   - No memory of terms across holdings: the term rests on the record and
//     the term floor alone (the HTTP service has no state to keep it in).
//   - A holder whose process is suspended with its monotonic clock stopped
//     (a VM suspend) can outlive its lease until its next renew fails; a
//     process pause is covered.
package mutex
