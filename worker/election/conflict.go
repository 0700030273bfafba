package election

import (
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/blobleader/blobleader/worker/election/lease"
	"github.com/blobleader/blobleader/worker/internal/setupconflict"
)

// Conflicting set-ups (docs/architecture.md#conflicting-set-ups). A follower
// reads the record of the lease someone else holds and compares it with
// itself:
//
//   - identity: the record names our identity but was written by another
//     process (lease.Record.Process), or by a writer that did not say which: a
//     second process runs under our identity;
//   - mode: the record was written by a contender of another Config.Mode (a
//     `run` supervisor and a worker on one lock; pools of different sizes).
//
// A record names us also when it is the last stamp of a process under our
// identity that is gone (our own restart) and its lease has not expired
// yet, and a record of another mode can be the last stamp of a fleet that
// was replaced. Neither outlives the lease: so a conflict is reported only
// once every read for conflictAfter has shown it, longer than any lease a
// departed contender left behind (L) plus a poll and a new holder's stamp,
// with no gap between two reads longer than a poll and two requests (after
// a gap, such as an outage, the watch starts again).
// A record our own process wrote (the lease of an ended leadership of ours,
// still in force at storage) is no conflict.

// Conflict kinds (the log line's `kind`).
const (
	conflictIdentity = "identity"
	conflictMode     = "mode"
)

// thisProcess names this process in the records it writes: host, pid and
// start (Unix ms), in printable ASCII.
var thisProcess = processName()

func processName() string {
	host, _ := os.Hostname()
	b := []byte(host)
	for i, c := range b {
		if c < '!' || c > '~' {
			b[i] = '_'
		}
	}
	return fmt.Sprintf("%.128s/%d/%d", b, os.Getpid(), time.Now().UnixMilli())
}

// conflictAfter is how long every read of the lock must show a conflicting
// set-up before it is reported (setupconflict.After).
func (c Config) conflictAfter() time.Duration {
	return setupconflict.After(c.LeaseDuration, c.RetryPeriod, c.RequestTimeout())
}

// readGap is the longest a follower goes between two reads of the record
// while it watches a conflict: a poll and two requests (acquire, read).
func (c Config) readGap() time.Duration {
	return c.RetryPeriod + c.RetryPeriod/10 + 2*c.RequestTimeout()
}

// setupWatch is what the elector knows of a conflicting set-up. e.mu guards it.
type setupWatch struct {
	kind   string    // the conflict the reads show; "" none
	since  time.Time // the first read that showed it
	last   time.Time // the last read that showed it
	reason string    // set once it has lasted conflictAfter: the report
	toldAt time.Time // when reason was last logged (once per LeaseDuration)
}

// checkSetup compares a record of a lease held by someone else (read at now)
// with this contender, and reports a conflict that has lasted conflictAfter.
// unconfirmed says the record's holder has stopped confirming it
// (confirm.go): the lease is someone's outside the election.
func (e *Elector) checkSetup(rec lease.Record, unconfirmed bool, now time.Time) {
	kind := ""
	switch {
	case unconfirmed:
		kind = conflictForeign
	case rec.Holder == e.cfg.Identity && rec.Process != thisProcess:
		kind = conflictIdentity
	case rec.Holder != e.cfg.Identity && rec.Holder != "" && rec.Mode != "" && e.cfg.Mode != "" && rec.Mode != e.cfg.Mode:
		kind = conflictMode
	}
	e.mu.Lock()
	w := &e.setup
	if kind != w.kind || now.Sub(w.last) > e.cfg.readGap() {
		*w = setupWatch{kind: kind, since: now}
	}
	w.last = now
	if kind == "" || now.Sub(w.since) < e.cfg.conflictAfter() {
		e.mu.Unlock()
		return
	}
	w.reason = e.conflictReason(kind, rec, now.Sub(w.since))
	tell := w.toldAt.IsZero() || now.Sub(w.toldAt) >= e.cfg.LeaseDuration
	if tell {
		w.toldAt = now
	}
	reason, state := w.reason, e.confirm.state
	e.mu.Unlock()
	if tell {
		args := []any{"event", setupconflict.LogEvent, "kind", kind, "holder", rec.Holder,
			"holder_mode", rec.Mode, "holder_process", rec.Process, "mode", e.cfg.Mode, "process", thisProcess,
			"term", rec.Term, "reason", reason}
		if kind == conflictForeign {
			args = append(args, "lease_state", state, "heartbeat", rec.Heartbeat, "confirm_within_ms", rec.BeatEvery.Milliseconds())
		}
		e.log.Warn("conflicting set-up", args...)
	}
}

func (e *Elector) conflictReason(kind string, rec lease.Record, lasted time.Duration) string {
	if kind == conflictForeign {
		return fmt.Sprintf("set-up conflict (%s): for %s the lease on %s has been held (%s) while its record — %s's, term %d, heartbeat %d — has not been confirmed for longer than the %s its writer promised: a holder outside the election (a tool's lease, e.g. `az storage blob lease acquire`), and nobody leads; break the lease (`az storage blob lease break`) or stop the tool",
			kind, lasted.Round(time.Second), e.lock.Describe(), e.confirm.state, strconv.Quote(rec.Holder), rec.Term, rec.Heartbeat, rec.BeatEvery)
	}
	if kind == conflictIdentity {
		other := rec.Process
		if other == "" {
			other = "a process that did not say which"
		}
		return fmt.Sprintf("set-up conflict (%s): for %s the lease on %s has been held under this contender's identity %s (term %d) by another process (%s) while this one (%s) follows: give each process its own identity",
			kind, lasted.Round(time.Second), e.lock.Describe(), strconv.Quote(rec.Holder), rec.Term, other, thisProcess)
	}
	return fmt.Sprintf("set-up conflict (%s): for %s the lease on %s has been held by %s in mode %s (term %d) while this contender runs mode %s: contenders of different modes share one lock",
		kind, lasted.Round(time.Second), e.lock.Describe(), strconv.Quote(rec.Holder), strconv.Quote(rec.Mode), rec.Term, strconv.Quote(e.cfg.Mode))
}

// suspecting reports whether a read showed a conflict not yet reported or
// still in force: the follower then reads the record every poll.
func (e *Elector) suspecting() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.setup.kind != ""
}
