package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/google/uuid"

	"github.com/blobleader/blobleader/worker/election"
	"github.com/blobleader/blobleader/worker/election/bloblock"
	"github.com/blobleader/blobleader/worker/election/lease"
)

// recoverHolder is the holder recover-term writes in the lock's record.
const recoverHolder = "operator:recover-term"

// runRecoverTerm is the operator's recovery of the lock's term with the
// workers up (docs/operations.md#recovering-the-term): take the lease
// (breaking a holder's: it learns at its next renew), set the term to
// floor+1 under it, release. A term at or above floor+1 is never lowered.
func runRecoverTerm(args []string, stdout, _ io.Writer) error {
	o, err := parseRecoverOptions(args, stdout)
	if err != nil {
		return err
	}
	var was string
	err = o.onStorage(func(ctx context.Context, c *container.Client) error {
		lock, err := bloblock.New(c, o.storage.blob)
		if err != nil {
			return err
		}
		r := &termRecovery{lock: lock, floor: o.floor, leaseID: uuid.NewString(), timeout: o.timeout, out: stdout}
		was, err = r.recover(ctx)
		return err
	})
	if err != nil {
		return err
	}
	if was == "" {
		was = "(none)"
	}
	fmt.Fprintf(stdout, "term set to %d (was %s); the next leader stamps a term above it\n", o.floor+1, strconv.Quote(was))
	return nil
}

// termRecovery is one recover-term: the lock, the floor, and the lease it
// takes.
type termRecovery struct {
	lock    *bloblock.Lock
	floor   int64
	leaseID string        // the lease it takes, as its own
	timeout time.Duration // --timeout, which ends ctx
	out     io.Writer     // where it says what it does
}

// recover sets the term to floor+1 and returns the term it found as written
// ("" for none). Every refusal is decided from the stored term before the
// lease is touched, and again under the lease before anything is written.
func (r *termRecovery) recover(ctx context.Context) (was string, err error) {
	// 1. Read the term as stored and decide, before touching anything: a
	// refused floor must leave the leader its lease.
	if _, err := r.check(ctx); err != nil {
		return "", err
	}
	// 2. Take the lease (breaking a leader's).
	if err := takeLease(ctx, r.lock, r.leaseID, r.out); err != nil {
		if ctx.Err() != nil {
			return "", fmt.Errorf("the lease kept being re-taken for %s: %w", r.timeout, err)
		}
		return "", err
	}
	// 3. Read again under our lease: a leader may have stamped a newer term
	// between the first read and the acquire.
	if was, err = r.check(ctx); err != nil {
		r.abandon(ctx)
		return "", err
	}
	// 4. Write floor+1 under our lease, then release.
	rec := lease.Record{Holder: recoverHolder, Term: r.floor + 1, Acquired: time.Now().UTC()}
	if err := r.lock.Update(ctx, r.leaseID, rec); err != nil {
		r.abandon(ctx)
		return "", fmt.Errorf("write the term: %w", err)
	}
	if err := r.lock.Release(ctx, r.leaseID); err != nil {
		return "", fmt.Errorf("term %d written, but the release failed (the lease expires within %s): %w", rec.Term, election.MinLeaseDuration, err)
	}
	return was, nil
}

// check reads the lock's record as stored and refuses a floor that would
// lower its term; it returns the term as written ("" for none).
func (r *termRecovery) check(ctx context.Context) (string, error) {
	stored, term, err := storedRecord(ctx, r.lock)
	if err != nil {
		return "", fmt.Errorf("read the record: %w", err)
	}
	return stored, checkFloor(r.floor, term)
}

// abandon releases the lease it took without writing (best effort: the
// lease expires on its own).
func (r *termRecovery) abandon(ctx context.Context) { _ = r.lock.Release(ctx, r.leaseID) }

// takeLease acquires the lock's lease as leaseID. Workers poll every P
// and a leader holds it: break and acquire at once, again until we hold it
// or ctx ends.
func takeLease(ctx context.Context, lock *bloblock.Lock, leaseID string, stdout io.Writer) error {
	for attempt := 1; ; attempt++ {
		err := lock.Acquire(ctx, leaseID, election.MinLeaseDuration)
		if err == nil {
			return nil
		}
		if !errors.Is(err, lease.ErrHeld) {
			return fmt.Errorf("take the lease: %w", err)
		}
		fmt.Fprintf(stdout, "lease held: breaking it (attempt %d)\n", attempt)
		if err := lock.Break(ctx, "", 0); err != nil && !bloberror.HasCode(err, bloberror.LeaseNotPresentWithLeaseOperation) {
			return fmt.Errorf("break the lease: %w", err)
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
}

// storedRecord reads the lock's record as stored (bloblock's Stored, not
// Get, which reads a missing term as the clock floor): the term as written
// ("" for none, or no blob yet), and the term a floor must not lower — 0
// when there is none, or when it is unusable (not a non-negative integer,
// or one that cannot grow), which recover-term repairs with any floor.
func storedRecord(ctx context.Context, lock *bloblock.Lock) (written string, term int64, err error) {
	rec, written, err := lock.Stored(ctx)
	switch {
	case errors.Is(err, lease.ErrUnusableRecord):
		return written, 0, nil
	case err != nil:
		return "", 0, err
	}
	return written, rec.Term, nil
}

// checkFloor refuses a floor that would lower the stored term (0: none, or
// unusable). A usable term is never lowered.
func checkFloor(floor, term int64) error {
	if term > floor {
		return usagef("invalid %s %d: the lock's term is already %d, and recover-term never lowers a term (it sets floor+1); nothing written", flagRef("floor"), floor, term)
	}
	return nil
}
