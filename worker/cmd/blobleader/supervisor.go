package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/blobleader/blobleader/worker/election"
	"github.com/blobleader/blobleader/worker/history"
	"github.com/blobleader/blobleader/worker/supervise"
)

// Environment the command gets on top of the supervisor's own.
const (
	envTerm     = "BLOBLEADER_TERM"     // the fencing term of the leadership it runs under
	envIdentity = "BLOBLEADER_IDENTITY" // the supervisor's --identity
)

// errStillRunning: a previous command has a member out of reach that may
// still run; no new command starts beside it.
var errStillRunning = errors.New("a member of the previous command is out of reach and may still run: not starting another")

// supervisor is the leader task of `blobleader run`: it runs the command for
// as long as the leadership lasts, and no longer.
type supervisor struct {
	o           *runOptions
	n           *node
	log         *slog.Logger
	exits       *prometheus.CounterVec
	running     prometheus.Gauge
	unreachable prometheus.Gauge
	guardsLost  prometheus.Counter
	endRun      context.CancelFunc // ends Run (the elector steps down as a shutdown)
	quit        chan struct{}      // closed on SIGTERM/SIGINT

	mu         sync.Mutex
	term       int64     // the leadership validUntil belongs to
	until      time.Time // its end as last known (started_leading, renewed); monotonic
	group      *supervise.Group
	groupTerm  int64
	outOfReach error // set while a member of the group is out of reach
	unguarded  error // set while the command runs without a guard
	signal     syscall.Signal
	status     supervise.ExitStatus // the last command's
	ran        bool                 // a command has run
	startErr   error                // the last start failure
	shutdown   bool
	lastRun    bool // --once: the command has run; end Run at the step-down
	progressed bool // a look found the running command's group alive (watch.go)
	quickExits int  // commands in a row that exited before any such look
}

// newSupervisor builds the supervisor on n, and its metrics. endRun ends
// Run, the elector's context.
func newSupervisor(o *runOptions, n *node, endRun context.CancelFunc) *supervisor {
	s := &supervisor{o: o, n: n, log: n.log, endRun: endRun, signal: syscall.SIGTERM, quit: make(chan struct{}),
		exits: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "blobleader_child_exits_total",
			Help: "Exits of the command run by `blobleader run`, by cause: exited (on its own), leadership_ended (stopped because leadership ended), shutdown (the supervisor was told to stop), guard_lost (no guard could be started), shim_lost (its shim died or stopped).",
		}, []string{"cause"}),
		running: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "blobleader_child_running",
			Help: "1 while the command of `blobleader run` (or any process it started) runs, else 0 (looked at twice per renew interval).",
		}),
		unreachable: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "blobleader_child_out_of_reach",
			Help: "1 while a process the command started cannot be signalled by the supervisor (it changed its user): the lease is held, never released, until it is gone.",
		}),
		guardsLost: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "blobleader_guard_lost_total",
			Help: "Group guards of `blobleader run` that died while their command ran (each is replaced at once, or the command is stopped and the lease released).",
		}),
	}
	for _, c := range []string{history.CauseExited, history.CauseLeadershipEnded, history.CauseShutdown, history.CauseGuardLost, history.CauseShimLost} {
		s.exits.WithLabelValues(c)
	}
	pipes := prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: "blobleader_output_broken_pipe_total",
		Help: "Writes of the supervisor to a pipe with no reader (SIGPIPE caught): the line is lost, the supervisor runs on.",
	}, func() float64 { return float64(brokenPipes.Load()) })
	n.metrics.Registry.MustRegister(s.exits, s.running, s.unreachable, s.guardsLost, pipes)
	return s
}

// mode is run's mode on the node: the supervisor leads (runs the command)
// and observes the elector's events; runHealth joins /healthz.
func (s *supervisor) mode() mode {
	return mode{
		callbacks:  election.Callbacks{OnStartedLeading: s.lead, OnEvent: s.observe},
		companions: []companion{runHealth{s}},
	}
}

// observe tracks the end of the current leadership from the elector's
// events, so the command's kill can be timed against it even if the
// elector's own step-down comes late, and moves the guard's deadline on
// every renew.
func (s *supervisor) observe(ev election.Event) {
	switch ev.Kind {
	case election.EventStartedLeading, election.EventRenewed:
		s.mu.Lock()
		if ev.Term != s.term || ev.ValidUntil.After(s.until) {
			s.term, s.until = ev.Term, ev.ValidUntil
		}
		g, gt := s.group, s.groupTerm
		s.mu.Unlock()
		if g != nil && gt == ev.Term {
			g.Extend(s.killBy(ev.Term))
		}
	case election.EventStoppedLeading:
		s.mu.Lock()
		last := s.lastRun
		s.mu.Unlock()
		if last {
			s.endRun()
		}
	}
}

// stopAtStepDown is how --once stops contending: Run ends once the
// step-down of the leadership that ran the command is recorded, so its
// reason is the command's exit ("task exited…"), not "shutdown".
func (s *supervisor) stopAtStepDown() {
	s.mu.Lock()
	s.lastRun = true
	s.mu.Unlock()
}

// validUntil is the end of leadership term as last known; zero if unknown
// or unbounded (a leadership claimed without a deadline).
func (s *supervisor) validUntil(term int64) time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.term != term {
		return time.Time{}
	}
	return s.until
}

func (s *supervisor) result() (supervise.ExitStatus, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.status, s.ran
}

func (s *supervisor) startFailure() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.startErr
}

// lead is OnStartedLeading: start the command, watch it, and return once it
// and everything it started are dead and reaped.
func (s *supervisor) lead(ctx context.Context, term int64) error {
	log := s.log.With("term", term)
	g, err := s.start(term)
	switch {
	case errors.Is(err, errStillRunning):
		log.Error("not starting the command", "err", err)
		return err
	case err != nil:
		log.Error("could not start the command; handing leadership on", "err", err)
		if s.o.once {
			s.stopAtStepDown()
		}
		return err
	case g == nil:
		return nil // shutting down: start nothing
	}
	s.started(term, g, log)
	cause, err := s.watch(ctx, term, g)
	if errors.Is(err, supervise.ErrSurvived) {
		s.abandon(log, g.Pid(), err)
		return err
	}
	st, cause := s.exited(term, g, cause, log)
	if s.o.once {
		s.stopAtStepDown()
	}
	if err != nil {
		return err
	}
	if cause == history.CauseExited {
		return s.exitedOnItsOwn(term, g, st, log)
	}
	if cause == history.CauseShutdown {
		// The shutdown ends Run once the group is reaped (onSignals): step
		// down as that shutdown, not as a task that exited.
		<-ctx.Done()
	}
	return nil
}

// exitedOnItsOwn is lead's error for a command that exited on its own: it
// hands leadership on. A command that exited before any look found it
// running (within half a renew interval: a crash at start, a bad
// configuration) made no progress; the error says so (ErrNoProgress), so
// the elector backs off before contending again (docs/architecture.md#the-election,
// backoff) instead of restarting it at once, for ever; logged with the
// count of such exits in a row.
func (s *supervisor) exitedOnItsOwn(term int64, g *supervise.Group, st supervise.ExitStatus, log *slog.Logger) error {
	s.mu.Lock()
	quick := !s.progressed
	if quick {
		s.quickExits++
	} else {
		s.quickExits = 0
	}
	n := s.quickExits
	s.mu.Unlock()
	if !quick {
		return fmt.Errorf("command %s", st)
	}
	log.Warn("the command exited before it ran for half a renew interval; backing off before contending again",
		"event", "child_backoff", "pid", g.Pid(), "status", st.String(), "quick_exits", n)
	return fmt.Errorf("command %s at once (%d in a row): %w", st, n, election.ErrNoProgress)
}

// abandon ends the process without releasing the lease, after a stop of
// the group of pid that failed with err (ErrSurvived): we cannot prove the
// command dead, and releasing now would let the next leader start while it
// may still run; the lease expires on its own. The line that says so is
// written before the exit (node.exitUnreleased).
func (s *supervisor) abandon(log *slog.Logger, pid int, err error) {
	log.Error("the command's process group survived SIGKILL; exiting without releasing the lease (it expires on its own)", "pid", pid, "err", err)
	s.n.exitUnreleased(1)
}

// started reports the command started for term: metric, history, log.
func (s *supervisor) started(term int64, g *supervise.Group, log *slog.Logger) {
	s.running.Set(1)
	s.n.write(history.NewChildRecord(s.o.identity, processStart, history.ChildEvent{Kind: history.EventChildStarted, Time: time.Now(), Term: term, PID: g.Pid()}))
	log.Info("command started", "pid", g.Pid(), "cgroup", g.Cgroup(), "group", groupMode(g.Cgroup() != ""))
}

// exited reports the end of the command started for term, reaped — a guard
// lost as it ended, metrics, history, log — and forgets its group. It
// returns the command's status and the cause as reported: a group the guard
// killed ended with the leadership, whatever the watch saw.
func (s *supervisor) exited(term int64, g *supervise.Group, cause string, log *slog.Logger) (supervise.ExitStatus, string) {
	for drained := false; !drained; {
		select {
		case loss := <-g.GuardLost(): // died as the command ended: still reported
			s.guardLost(term, g, loss)
		default:
			drained = true
		}
	}
	st := g.Status()
	if g.KilledByGuard() {
		cause = history.CauseLeadershipEnded
	}
	s.running.Set(0)
	s.unreachable.Set(0)
	s.exits.WithLabelValues(cause).Inc()
	s.n.write(history.NewChildRecord(s.o.identity, processStart, history.ChildEvent{Kind: history.EventChildExited, Time: time.Now(), Term: term, PID: g.Pid(),
		ExitCode: st.Code, Signal: st.SignalName(), Cause: cause}))
	log.Info("command exited", "pid", g.Pid(), "status", st.String(), "cause", cause, "killed_by_guard", g.KilledByGuard())
	s.mu.Lock()
	s.status, s.ran = st, true
	s.group, s.outOfReach, s.unguarded = nil, nil, nil
	s.mu.Unlock()
	return st, cause
}

// start starts the command for term, unless the supervisor is shutting
// down (nil, nil) or a previous command may still run (errStillRunning).
func (s *supervisor) start(term int64) (*supervise.Group, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.shutdown:
		return nil, nil
	case s.group != nil:
		return nil, errStillRunning
	}
	g, err := supervise.Start(supervise.Spec{Path: s.o.path, Args: s.o.argv, Env: commandEnv(os.Environ(), term, s.o.identity),
		Guard: s.o.guard, Shim: s.o.guard, KillAt: s.killByLocked(term)})
	if err != nil {
		s.startErr = err
		return nil, err
	}
	s.group, s.groupTerm, s.startErr, s.progressed = g, term, nil, false
	return g, nil
}

// commandEnv is env with the fencing term and the identity set (replacing any
// inherited values).
func commandEnv(env []string, term int64, identity string) []string {
	out := make([]string, 0, len(env)+2)
	for _, kv := range env {
		if strings.HasPrefix(kv, envTerm+"=") || strings.HasPrefix(kv, envIdentity+"=") {
			continue
		}
		out = append(out, kv)
	}
	return append(out, envTerm+"="+strconv.FormatInt(term, 10), envIdentity+"="+identity)
}
