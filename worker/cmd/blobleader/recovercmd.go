package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"
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
	var r readFlags
	var floor string
	fs := newFlagSet("blobleader recover-term", stdout, `blobleader recover-term — set the lock's term above a floor, with the workers running.

Usage:
  blobleader recover-term --floor N [storage flags]

For a lock whose term an operator mistyped (no worker can lead; /readyz says
why), or that is below terms a fenced store has seen (storage restored, a
clock set back): N is the highest term any leader may have used — e.g. the
last ledger entry's (blobleader ledger --json | tail -1). It takes the lock's
lease (breaking the leader's if one holds it: that leader steps down at its
next renew, as after any forced break), writes term N+1, and releases; the
next leader stamps above N+1. It refuses (exit 2, the record untouched) when
the term is already N+1 or more: a term is never lowered. An unusable term
(not a non-negative integer, or 9223372036854775807) is repaired with any N.

Exit codes: 0 term set, 2 invalid input or a floor that would lower the term,
1 anything else (storage unreachable, the lease kept being re-taken).`)
	r.register(fs.FlagSet)
	fs.StringVar(&floor, "floor", "", "the highest term any leader may have used (required): the term is set to floor+1; a non-negative integer below 9223372036854775807")
	if err := fs.parse(args); err != nil {
		return err
	}
	n, err := parseFloor(floor)
	if err != nil {
		return fs.explain(err)
	}
	c, ctx, cancel, err := r.open()
	if err != nil {
		return fs.explain(err)
	}
	defer cancel()
	lock, err := bloblock.New(c, r.storage.blob)
	if err != nil {
		return err
	}
	// 1. Read the term as stored and decide, before touching anything: a
	// refused floor must leave the leader its lease.
	stored, cur, err := storedRecord(ctx, lock)
	if err != nil {
		return fmt.Errorf("read the record: %w", err)
	}
	if err := checkFloor(n, cur); err != nil {
		return err
	}
	// 2. Take the lease (breaking a leader's).
	leaseID := uuid.NewString()
	if err := takeLease(ctx, lock, leaseID, stdout); err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("the lease kept being re-taken for %s: %w", r.timeout, err)
		}
		return err
	}
	release := func() { _ = lock.Release(ctx, leaseID) }
	// Read again under our lease: a leader may have stamped a newer term
	// between the first read and the acquire.
	if stored, cur, err = storedRecord(ctx, lock); err != nil {
		release()
		return fmt.Errorf("read the record: %w", err)
	}
	if err := checkFloor(n, cur); err != nil {
		release()
		return err
	}
	// 3. Write floor+1 under our lease, then release.
	rec := lease.Record{Holder: recoverHolder, Term: n + 1, Acquired: time.Now().UTC()}
	if err := lock.Update(ctx, leaseID, rec); err != nil {
		release()
		return fmt.Errorf("write the term: %w", err)
	}
	if err := lock.Release(ctx, leaseID); err != nil {
		return fmt.Errorf("term %d written, but the release failed (the lease expires within %s): %w", rec.Term, election.MinLeaseDuration, err)
	}
	was := stored
	if was == "" {
		was = "(none)"
	}
	fmt.Fprintf(stdout, "term set to %d (was %s); the next leader stamps a term above it\n", rec.Term, strconv.Quote(was))
	return nil
}

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

// parseFloor checks --floor: a non-negative integer whose successor, the
// term set, can still grow.
func parseFloor(floor string) (int64, error) {
	n, err := strconv.ParseInt(floor, 10, 64)
	switch {
	case floor == "":
		return 0, usagef("missing --floor: the highest term any leader may have used (e.g. the last ledger entry's)")
	case err != nil || n < 0:
		return 0, usagef("invalid --floor %q: must be a non-negative integer", floor)
	case n >= math.MaxInt64-1:
		return 0, usagef("invalid --floor %d: must be below %d, so that the term set (floor+1) can still grow", n, int64(math.MaxInt64-1))
	}
	return n, nil
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
		return usagef("invalid --floor %d: the lock's term is already %d, and recover-term never lowers a term (it sets floor+1); nothing written", floor, term)
	}
	return nil
}
