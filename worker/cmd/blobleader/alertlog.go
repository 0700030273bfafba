package main

import (
	"context"
	"log/slog"
	"time"

	"github.com/blobleader/blobleader/worker/election"
)

// The log lines the shipped Azure Monitor alerts (infra/alerts.tf) parse
// (docs/architecture.md#log-lines-the-alerts-read). Their `event` values and
// fields are a contract.
//
// Every line reports a step already taken (act first, report after): the
// leadership lines are written from the elector's OnEvent, after the step
// they report, like the history record beside them; the periodic status
// line runs in its own goroutine, beside the election and never on its path.

// Values of the `event` field of the alert log lines.
const (
	logEventStartedLeading = "started_leading"
	logEventStoppedLeading = "stopped_leading"
	logEventStatus         = "status"
	logEventStorageRefusal = "storage_forbidden"
	logEventShards         = "shards" // while this worker coordinates a --shards pool
)

// logLeadership writes one line per leadership change, carrying the identity
// (from the node's logger), the term and how long the leadership is known to
// last, so that two concurrent claims are visible in the logs alone.
func (n *node) logLeadership(ev election.Event) {
	switch ev.Kind {
	case election.EventStartedLeading:
		n.log.Info("leadership", "event", logEventStartedLeading, "term", ev.Term, "valid_until", rfc3339(ev.ValidUntil))
	case election.EventStoppedLeading:
		n.log.Info("leadership", "event", logEventStoppedLeading, "term", ev.Term, "reason", ev.Reason, "valid_until", rfc3339(ev.ValidUntil))
	}
}

// withoutLeadershipLines drops the elector's own "started leading" and
// "stopped leading" lines: the node reports each change once, as the alert
// line (logLeadership). Shard electors keep theirs (a shard's ownership is
// not the election's).
type withoutLeadershipLines struct{ slog.Handler }

func (h withoutLeadershipLines) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == "started leading" || r.Message == "stopped leading" {
		return nil
	}
	return h.Handler.Handle(ctx, r)
}

func (h withoutLeadershipLines) WithAttrs(as []slog.Attr) slog.Handler {
	return withoutLeadershipLines{h.Handler.WithAttrs(as)}
}

func (h withoutLeadershipLines) WithGroup(name string) slog.Handler {
	return withoutLeadershipLines{h.Handler.WithGroup(name)}
}

// observeRequest records a storage request in the metrics and logs every
// 403: a refusal that outlasts RBAC propagation is an alert.
func (n *node) observeRequest(op, code string, took time.Duration) {
	n.metrics.ObserveRequest(op, code, took)
	if code == "403" {
		n.log.Warn("storage request forbidden", "event", logEventStorageRefusal, "op", op, "code", 403)
	}
}

// statusSnapshot is what one status line says.
type statusSnapshot struct {
	role       election.Role
	term       int64
	leader     string
	validUntil time.Time
	health     string // empty: healthy
	starting   bool   // no definite storage answer yet (election.Status.Starting)
	readiness  string // empty: ready
}

func (n *node) snapshot() statusSnapshot {
	s := n.elector.Status()
	snap := statusSnapshot{role: s.Role, term: s.Term, leader: s.Leader, validUntil: s.ValidUntil, starting: s.Starting}
	if err := n.health(); err != nil {
		snap.health = err.Error()
	}
	if err := n.ready(); err != nil {
		snap.readiness = err.Error()
	}
	return snap
}

// changed reports whether a new line is due for reasons other than time:
// a different role, term or leader, health or readiness turning, or
// start-up ending.
func (s statusSnapshot) changed(prev statusSnapshot) bool {
	return s.role != prev.role || s.term != prev.term || s.leader != prev.leader || (s.health == "") != (prev.health == "") ||
		(s.readiness == "") != (prev.readiness == "") || s.starting != prev.starting
}

// logStatus writes a status line once per lease duration, and at once
// (within one retry period) when role, term, leader or health change, until
// ctx ends. The periodic line is what lets a query tell "no leader" from
// "no news": every worker keeps saying who it is and what it sees.
func (n *node) logStatus(ctx context.Context) {
	stateLines[statusSnapshot]{
		check: n.cfg.RetryPeriod, every: n.cfg.LeaseDuration,
		read:    func() (statusSnapshot, bool) { return n.snapshot(), true },
		changed: statusSnapshot.changed,
		write:   n.writeStatus,
	}.run(ctx)
}

func (n *node) writeStatus(s statusSnapshot) {
	args := []any{"event", logEventStatus, "role", string(s.role), "term", s.term, "leader", s.leader,
		"valid_until", rfc3339(s.validUntil), "healthy", s.health == "", "ready", s.readiness == "", "starting", s.starting}
	if s.readiness != "" {
		args = append(args, "readiness", s.readiness)
	}
	if s.health != "" {
		args = append(args, "health", s.health)
		n.log.Warn("status", args...)
		return
	}
	n.log.Info("status", args...)
}

// shardsLine is what one shards line says that makes a new line due.
type shardsLine struct {
	term    int64
	unowned int
	since   time.Time
}

// shardsReading is one reading of the pool for the shards line.
type shardsReading struct {
	shardsLine
	shards int // the pool's size, as the assignment says
}

// logShards writes, while this worker coordinates the pool, one shards line
// once per lease duration and within one retry period of a change in the
// count of assigned shards with no lease held, until ctx ends.
func (m *shardMode) logShards(ctx context.Context) {
	stateLines[shardsReading]{
		check: m.cfg.RetryPeriod, every: m.cfg.LeaseDuration,
		read:    m.readShards,
		changed: func(cur, prev shardsReading) bool { return cur.shardsLine != prev.shardsLine },
		write:   m.writeShards,
	}.run(ctx)
}

// readShards reads the pool as the coordinator sees it; false while this
// worker does not coordinate it.
func (m *shardMode) readShards() (shardsReading, bool) {
	n, since, ok := m.w.Unowned()
	a := m.w.Assignment()
	if !ok || a == nil {
		return shardsReading{}, false
	}
	return shardsReading{shardsLine{term: a.Term, unowned: n, since: since}, a.Shards}, true
}

func (m *shardMode) writeShards(r shardsReading) {
	args := []any{"event", logEventShards, "term", r.term, "shards", r.shards, "unowned", r.unowned, "unowned_since", rfc3339(r.since)}
	if r.unowned > 0 {
		m.log.Warn("shards", args...)
	} else {
		m.log.Info("shards", args...)
	}
}

// stateLines writes the lines that report a state: once per every, and
// within one check period of a change (changed, current first). read is the
// state now, and false when there is nothing to report; the next line is
// then due as soon as there is.
type stateLines[T any] struct {
	check, every time.Duration
	read         func() (T, bool)
	changed      func(cur, prev T) bool
	write        func(T)
}

// run writes the lines until ctx ends. It runs beside the election, never
// on its path.
func (l stateLines[T]) run(ctx context.Context) {
	t := time.NewTicker(l.check)
	defer t.Stop()
	var last T
	var lastAt time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			cur, ok := l.read()
			if !ok {
				lastAt = time.Time{}
				continue
			}
			if !lastAt.IsZero() && now.Sub(lastAt) < l.every && !l.changed(cur, last) {
				continue
			}
			last, lastAt = cur, now
			l.write(cur)
		}
	}
}

// rfc3339 formats t in UTC, or "" for the zero time (no bound known).
func rfc3339(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}
