package election

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/blobleader/blobleader/worker/election/lease"
	"github.com/blobleader/blobleader/worker/internal/storagelog"
)

// Storage answers (docs/architecture.md#the-election, "Expected answers").
// Every answer to an election call is either expected — a success, or an
// answer the protocol is built on (the lease is held, our lease is gone, no
// record yet) — or unexpected: any other refusal (400 InvalidHeaderValue
// from an emulator that does not know the API version, 403, 429, 5xx) and
// no answer at all (a timeout, a refused connection). Unexpected answers are
// logged, the first of each operation and code at once and then one line per
// LeaseDuration with how many it stands for, and Ready names the last one.
// A start without any expected answer is start-up (Status.Starting), never a
// failure of health: a restart cures none of its causes.

// answers is what the elector remembers of storage's answers.
type answers struct {
	mu     sync.Mutex
	last   string // the last unexpected answer, described; "" if none
	lastAt time.Time
	lines  storagelog.Limiter // per operation, status and code: the rate limit
}

// expectedAnswer reports whether err (nil: success) is an answer the
// protocol expects.
func expectedAnswer(err error) bool {
	return err == nil || errors.Is(err, lease.ErrHeld) || errors.Is(err, lease.ErrLost) ||
		errors.Is(err, lease.ErrUnusableRecord) // storage answered; the record is the problem, reported on its own
}

// noteAnswer records the outcome of one storage call made under ctx, and
// logs it if it was unexpected and its line is due. An outcome after ctx
// ended (Run stopping, a leadership stepping down) says nothing about
// storage and is ignored, as is an error that is not storage's.
func (e *Elector) noteAnswer(ctx context.Context, err error) {
	if ctx.Err() != nil {
		return
	}
	var se lease.StorageError
	if expectedAnswer(err) || !errors.As(err, &se) {
		return
	}
	op, status, code, message := se.StorageAnswer()
	if due, repeated := e.answers.unexpected(time.Now(), op, status, code, message, e.cfg.LeaseDuration); due {
		storagelog.Write(e.log, op, status, code, message, repeated)
	}
}

// unexpected records one unexpected answer and says whether its line is
// due: the first for its operation and code, or the first after
// LeaseDuration since the last line, which carries how many came between.
func (a *answers) unexpected(now time.Time, op string, status int, code, message string, every time.Duration) (due bool, repeated int) {
	a.mu.Lock()
	a.last, a.lastAt = describeAnswer(op, status, code, message), now
	a.mu.Unlock()
	return a.lines.Due(now, every, op, status, code)
}

func describeAnswer(op string, status int, code, message string) string {
	s := fmt.Sprintf("%s: no answer (%s)", op, code)
	if status != 0 {
		s = fmt.Sprintf("%s: %d", op, status)
		if code != "" {
			s += " " + code
		}
	}
	if message != "" {
		s += ": " + message
	}
	return s
}

// lastUnexpected describes the last unexpected answer and how long ago it
// came, or "" if none came.
func (a *answers) lastUnexpected(now time.Time) string {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.last == "" {
		return ""
	}
	return fmt.Sprintf("%s (%s ago)", a.last, now.Sub(a.lastAt).Round(time.Millisecond))
}
