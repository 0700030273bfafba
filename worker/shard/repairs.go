package shard

import (
	"context"
	"errors"
	"fmt"

	"github.com/blobleader/blobleader/worker/election/lease"
)

// Why the coordinator repairs a pool document (docs/architecture.md#shards,
// "State we did not write is validated, never trusted"): the `cause` of
// Config.OnRepair and of the blobleader_repairs_total metric.
const (
	// CauseMissing: the document was deleted while the pool had one.
	CauseMissing = "missing"
	// CauseRolledBack: it went back below the version this term published.
	CauseRolledBack = "rolled_back"
	// CauseNotValid: it is not JSON, or breaks its own rules.
	CauseNotValid = "not_valid"
	// CauseTermAboveLock: it carries a term (in its JSON or its metadata)
	// above the term of the lock's record, which this leader holds: a
	// planted term, never a newer leader's.
	CauseTermAboveLock = "term_above_lock"
)

// Objects the coordinator repairs (Config.OnRepair's `object`).
const (
	ObjectAssignment = "assignment"
	ObjectSummary    = "summary"
)

// outranked decides what a document of the pool holding term `found`, above
// this leader's, means. A document cannot tell who wrote it; only the lock's
// record says who leads (a term is data, never an order). A record that is
// no longer ours — another term, another holder, none at all — means a newer
// leader has taken the lock: ErrDeposed. Our own record means the term was
// planted (an upload, a restore of another pool's copy): the document is
// corrupt and ours to repair under our term; outranked returns nil.
// A leader stamps the lock's record before it publishes anything, so a
// document written by a newer leader is always outranked by that leader's
// record by the time anyone reads the document.
func (co *coordinator) outranked(ctx context.Context, object string, found int64) error {
	var rec lease.Record
	err := co.call(ctx, func(c context.Context) (err error) { rec, err = co.w.lockRecord(c); return err })
	if err != nil {
		return fmt.Errorf("the %s holds term %d above ours (%d), and reading the lock's record failed: %w", object, found, co.term, err)
	}
	if rec.Term != co.term || rec.Holder != co.w.cfg.Election.Identity {
		return fmt.Errorf("%w: the %s holds term %d, and the lock's record names %q at term %d (we are term %d)", ErrDeposed, object, found, rec.Holder, rec.Term, co.term)
	}
	return nil
}

// repaired counts one repair of object for cause (Config.OnRepair).
func (w *Worker) repaired(object, cause string) {
	if w.cfg.OnRepair != nil {
		w.cfg.OnRepair(object, cause)
	}
}

// lockRecord reads the election lock's record as stored. A record whose
// term cannot give a next one still comes back (with its term, 0 when it
// is not a number), and so does a missing one (holder and term empty): for
// the pool either is a record that no longer names its leader.
func (w *Worker) lockRecord(ctx context.Context) (lease.Record, error) {
	rec, _, err := w.lock.Stored(ctx)
	switch {
	case errors.Is(err, lease.ErrUnusableRecord):
		return rec, nil // nobody leads on it: it raises no ceiling
	case err == nil && rec.Holder != "":
		w.noteLockTerm(rec.Term)
	}
	return rec, err
}

// noteLockTerm raises the highest term this worker has read in the lock's
// record (or led under): the ceiling of the assignments it follows.
func (w *Worker) noteLockTerm(t int64) {
	for {
		old := w.lockTerm.Load()
		if t <= old || w.lockTerm.CompareAndSwap(old, t) {
			return
		}
	}
}

// confirmTerm reports whether an assignment of term t may be followed: its
// term is at or below a term the lock's record has shown. Above the highest
// one known it reads the record once more (a new leader stamps it before it
// publishes, so a real newer assignment is confirmed by that read).
func (w *Worker) confirmTerm(ctx context.Context, t int64) (lockTerm int64, ok bool, err error) {
	if t <= w.lockTerm.Load() {
		return w.lockTerm.Load(), true, nil
	}
	if _, err := w.lockRecord(ctx); err != nil {
		return 0, false, err
	}
	return w.lockTerm.Load(), t <= w.lockTerm.Load(), nil
}
