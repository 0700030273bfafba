package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/blobleader/blobleader/worker/election"
	"github.com/blobleader/blobleader/worker/election/bloblock"
	"github.com/blobleader/blobleader/worker/ledger"
)

// ledgerTask is the reference leader task: every tick, append one entry
// {seq, term, holder, at} to the fenced ledger. It shows the discipline a
// real task needs: every side effect carries the term, is skipped the moment
// leadership lapses (election.Leading, even before the election loop
// notices), and stops for good when storage says a newer term has taken
// over. It reports progress to the stall watchdog only when an append
// landed: a leader whose appends all fail (a ledger nobody can append to)
// is stepped down by its watchdog and backs off, instead of holding the
// lease for ever (docs/architecture.md#the-election). In shard mode ctx is
// a shard task's, so the leadership is the shard's.
type ledgerTask struct {
	c              *container.Client
	blob, identity string
	// lock and container name the lock whose terms the task writes under
	// (the election's, or the shard's), for the repair it prints when the
	// ledger holds a term that lock never gave.
	lock, container string
	tick            time.Duration
	requestTimeout  time.Duration
	onAppend        func(seq int64)            // optional: told each appended sequence (shard progress)
	onRepair        func(object, cause string) // optional: told each ledger segment repaired
	log             *slog.Logger
}

// logEventLedgerTermAboveLock is the event of the line that prints the
// repair of a ledger holding a term its lock never gave
// (docs/architecture.md#the-fenced-ledger-the-reference-leader-task).
const logEventLedgerTermAboveLock = "ledger_term_above_lock"

func (t *ledgerTask) run(ctx context.Context, term int64) error {
	log := t.log.With("term", term)
	var w *ledger.Writer
	told := false
	ticker := time.NewTicker(t.tick)
	defer ticker.Stop()
	for {
		if election.Leading(ctx) {
			if err := t.step(ctx, term, &w); err != nil {
				var above *ledger.TermAbove
				switch {
				case errors.As(err, &above) && t.lockStillOurs(ctx, term):
					// Not a newer leader: one holds the lock's record, and it
					// names us. Appending under our term would make the
					// ledger's terms go back; handing on helps nobody (every
					// next term is as low). Stay, make no progress (the
					// watchdog steps us down and backs off), and say how to
					// repair it, once per leadership.
					if !told {
						told = true
						log.Error("the ledger holds a term above its lock's, which no leader of the lock held; no leader can append until the lock's term is raised above it",
							"event", logEventLedgerTermAboveLock, "term_found", above.Term, "segment", above.Segment, "lock", t.lock,
							"repair", fmt.Sprintf("blobleader recover-term --container %s --blob %s --floor %d", t.container, t.lock, above.Term))
					}
				case errors.Is(err, ledger.ErrFenced):
					log.Warn("ledger fenced by a newer term; handing leadership on", "err", err)
					return err
				case ctx.Err() == nil:
					log.Warn("ledger write failed", "err", err)
				}
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C:
		}
	}
}

// lockStillOurs reports whether the lock's record still names this task's
// holder under its term: then a ledger term above it is no newer leader's.
// Any doubt (a read that fails) says no.
func (t *ledgerTask) lockStillOurs(ctx context.Context, term int64) bool {
	lock, err := bloblock.New(t.c, t.lock)
	if err != nil {
		return false
	}
	rctx, cancel := context.WithTimeout(ctx, t.requestTimeout)
	defer cancel()
	rec, _, err := lock.Stored(rctx)
	return err == nil && rec.Term == term && rec.Holder == t.identity
}

// repaired reports a ledger segment this task repaired.
func (t *ledgerTask) repaired(cause string) {
	if t.onRepair != nil {
		t.onRepair("ledger", cause)
	}
}

func (t *ledgerTask) step(ctx context.Context, term int64, w **ledger.Writer) error {
	rctx, cancel := context.WithTimeout(ctx, 2*t.requestTimeout)
	defer cancel()
	if *w == nil {
		nw, err := ledger.Open(rctx, t.c, t.blob, term, t.identity, ledger.Options{OnForeign: func(seg int, blobType string) {
			t.log.Warn("ledger segment written outside the ledger: sealed it under our term and continued in the next", "term", term, "segment", seg, "blob_type", blobType)
			t.repaired("foreign_segment")
		}, OnNotALedger: func(seg int, blobType string) {
			t.log.Warn("ledger segment is not a ledger: kept it as found, sealed under our term, and continued in the next", "term", term, "segment", seg, "blob_type", blobType)
			t.repaired("not_a_ledger")
		}})
		if err != nil {
			return err
		}
		*w = nw
		t.log.Info("ledger opened for our term", "term", term)
	}
	e, err := (*w).Append(rctx)
	if err != nil {
		return err
	}
	// Work landed: progress for the stall watchdog.
	election.Progress(ctx)
	t.log.Debug("ledger append", "seq", e.Seq, "term", e.Term)
	if t.onAppend != nil {
		t.onAppend(e.Seq)
	}
	return nil
}
