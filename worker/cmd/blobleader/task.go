package main

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/blobleader/blobleader/worker/election"
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
	tick           time.Duration
	requestTimeout time.Duration
	onAppend       func(seq int64) // optional: told each appended sequence (shard progress)
	log            *slog.Logger
}

func (t *ledgerTask) run(ctx context.Context, term int64) error {
	log := t.log.With("term", term)
	var w *ledger.Writer
	ticker := time.NewTicker(t.tick)
	defer ticker.Stop()
	for {
		if election.Leading(ctx) {
			if err := t.step(ctx, term, &w); err != nil {
				if errors.Is(err, ledger.ErrFenced) {
					log.Warn("ledger fenced by a newer term; handing leadership on", "err", err)
					return err
				}
				if ctx.Err() == nil {
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

func (t *ledgerTask) step(ctx context.Context, term int64, w **ledger.Writer) error {
	rctx, cancel := context.WithTimeout(ctx, 2*t.requestTimeout)
	defer cancel()
	if *w == nil {
		nw, err := ledger.Open(rctx, t.c, t.blob, term, t.identity, ledger.Options{OnForeign: func(seg int, blobType string) {
			t.log.Warn("ledger segment written outside the ledger: sealed it under our term and continued in the next", "term", term, "segment", seg, "blob_type", blobType)
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
