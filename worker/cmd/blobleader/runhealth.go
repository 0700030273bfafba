package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/blobleader/blobleader/worker/election"
	"github.com/blobleader/blobleader/worker/history"
	"github.com/blobleader/blobleader/worker/supervise"
)

// What makes `blobleader run` unhealthy beside its elector: a member of the
// command out of the supervisor's reach (it changed its user), or a command
// running without its group guard. Each is reported loudly — log, history,
// metric — and /healthz answers 503 while it lasts.

// reportOutOfReach says, once per group and loudly, that a member of the
// group cannot be signalled: log, history, metric and /healthz.
func (s *supervisor) reportOutOfReach(term int64, g *supervise.Group, err error) {
	s.mu.Lock()
	first := s.outOfReach == nil
	s.outOfReach = err
	s.mu.Unlock()
	s.unreachable.Set(1)
	if !first {
		return
	}
	r := history.NewChildRecord(s.o.identity, processStart, history.ChildEvent{Kind: history.EventChildOutOfReach, Time: time.Now(), Term: term, PID: g.Pid()})
	r.Reason = err.Error()
	s.n.write(r)
	s.log.Error("a process of the command is out of reach (it changed its user): the lease is held and never released while it may run; run the supervisor as that user (sudo blobleader run -- job, not blobleader run -- sudo job)",
		"pid", g.Pid(), "err", err)
}

// guardLost reports a guard that died while the command ran: loudly (log,
// history, metric) and, when no guard could take its place, /healthz 503
// until the command is stopped. It says whether the command is unguarded.
func (s *supervisor) guardLost(term int64, g *supervise.Group, loss supervise.GuardLoss) bool {
	s.guardsLost.Inc()
	reason := fmt.Sprintf("guard %d %s; guard %d holds the deadline now", loss.Pid, loss.Status, loss.NewPid)
	switch {
	case loss.Ended:
		reason = fmt.Sprintf("guard %d %s while the command ran; the command has ended, none was started in its place", loss.Pid, loss.Status)
	case loss.Err != nil:
		reason = fmt.Sprintf("guard %d %s; no guard could take its place (%v): stopping the command and releasing", loss.Pid, loss.Status, loss.Err)
		s.mu.Lock()
		s.unguarded = errors.New("command unguarded: " + reason)
		s.mu.Unlock()
	}
	r := history.NewChildRecord(s.o.identity, processStart, history.ChildEvent{Kind: history.EventGuardLost, Time: loss.Time, Term: term, PID: g.Pid()})
	r.Reason = reason
	s.n.write(r)
	s.log.Error("the command's group guard died", "event", history.EventGuardLost, "term", term, "pid", g.Pid(),
		"guard_pid", loss.Pid, "guard_status", loss.Status, "new_guard_pid", loss.NewPid, "reason", reason)
	return loss.Err != nil
}

// runHealth is run mode's companion beside the election: /healthz (and
// blobleader_healthy) fail while a member of the command is out of reach,
// and while the command runs without a guard. It runs nothing of its own.
type runHealth struct{ s *supervisor }

// handler answers /healthz 503 while a member is out of reach (the
// contract's handler answers only for the elector), else defers to base.
func (c runHealth) handler(_ *election.Elector, base http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := c.healthy(); err != nil && r.URL.Path == "/healthz" {
			answerProbe(w, err)
			return
		}
		base.ServeHTTP(w, r)
	})
}

func (c runHealth) run(ctx context.Context) error {
	<-ctx.Done()
	return nil
}

func (c runHealth) healthy() error {
	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	if c.s.outOfReach != nil {
		return fmt.Errorf("command out of reach: %w", c.s.outOfReach)
	}
	return c.s.unguarded
}
