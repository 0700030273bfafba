package lockapi

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/blobleader/blobleader/worker/election"
	"github.com/blobleader/blobleader/worker/election/lease"
	"github.com/blobleader/blobleader/worker/internal/storagelog"
	"github.com/blobleader/blobleader/worker/mutex"
)

// public is what an answer may say about a failed storage call: the
// operation and storage's status and code (lease.StorageError), never the
// request URL (a SAS connection string carries its signature in it) nor a
// transport's text.
func public(err error) string {
	var se lease.StorageError
	if !errors.As(err, &se) {
		if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
			return "request ended before storage answered"
		}
		return "storage request failed"
	}
	op, status, code, _ := se.StorageAnswer()
	switch {
	case status != 0 && code != "":
		return fmt.Sprintf("%s: %d %s", op, status, code)
	case status != 0:
		return fmt.Sprintf("%s: HTTP %d", op, status)
	case code == "timeout":
		return op + ": request timed out"
	}
	return op + ": no answer from storage"
}

// storageLogEvery is how often a repeated unexpected storage answer is
// logged again: the default lease duration, as the elector does.
var storageLogEvery = election.DefaultTiming().LeaseDuration

// storageAnswers logs the storage failures behind the service's answers —
// the storage_error line of the alerts (docs/architecture.md#log-lines-the-alerts-read):
// the first of each operation, status and code at once, then one line per
// storageLogEvery with how many it stands for.
type storageAnswers struct {
	log   *slog.Logger
	lines storagelog.Limiter
}

func newStorageAnswers(log *slog.Logger) *storageAnswers { return &storageAnswers{log: log} }

// note records the outcome of one operation's storage calls: an error that
// carries storage's answer (or its absence) is logged when its line is due.
// Answers the lock protocol expects (held, not held, another holding) and
// the outcome of a request that ended (ctx done) are not storage's failures.
func (a *storageAnswers) note(ctx context.Context, err error) {
	var se lease.StorageError
	if err == nil || ctx.Err() != nil || errors.Is(err, mutex.ErrLocked) || errors.Is(err, mutex.ErrNotHeld) ||
		errors.Is(err, mutex.ErrNotOwner) || !errors.As(err, &se) {
		return
	}
	op, status, code, message := se.StorageAnswer()
	if due, repeated := a.lines.Due(time.Now(), storageLogEvery, op, status, code); due {
		storagelog.Write(a.log, op, status, code, message, repeated)
	}
}
