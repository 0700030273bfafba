// Package lockapi serves named resource locks (package mutex) over HTTP in
// the shape of Dapr's distributed lock API, so Dapr's clients and curl
// examples work against it unchanged, plus what Dapr lacks: the fencing
// term in the lock answer, a bounded wait, a renew, and a read of a
// resource's holder and term. The contract (paths, bodies, status codes,
// what a client may believe) is docs/architecture.md#resource-locks.
//
// The service is stateless: a holding's lease ID is derived from (store,
// resourceId, lockOwner) (LeaseID), so any replica renews or releases a
// lock another granted, and a replica's death loses no lock.
//
// What a client may believe: the lock from the send of its lock request
// until that send + expiryInSeconds − election.SafetyMargin (the lease is
// granted at or after the send, for expiryInSeconds; the margin covers
// clock-rate drift), extended the same way from the send of each renew
// that answered status 0. Nothing renews in the background. Pass the term
// to every side effect and let its storage refuse a lower one.
//
// As in Dapr's lock stores, a lock request by the owner that holds the lock
// answers success false. A client that lost a lock answer recovers with
// unlock (same lockOwner), then lock again; one that knows its term renews
// with it (docs/architecture.md#resource-locks).
//
// What Dapr's term-less unlock can and cannot guarantee: it never frees
// another owner's lock (another lease ID), but a late term-less unlock from
// an ended holding of the same lockOwner frees that owner's later holding.
// Dapr asks for a lockOwner unique per request; with "term" in the unlock
// (and renew) body the request acts only on the holding of that term.
package lockapi
