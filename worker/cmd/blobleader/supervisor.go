package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
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
	// fatal ends the process without releasing the lease (a group that
	// survived SIGKILL must not be followed by a release).
	fatal func(code int)
	quit  chan struct{} // closed on SIGTERM/SIGINT

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
}

// newSupervisor builds the supervisor on n, and its metrics. endRun ends
// Run, the elector's context.
func newSupervisor(o *runOptions, n *node, endRun context.CancelFunc) *supervisor {
	s := &supervisor{o: o, n: n, log: n.log, endRun: endRun, fatal: os.Exit, signal: syscall.SIGTERM, quit: make(chan struct{}),
		exits: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "blobleader_child_exits_total",
			Help: "Exits of the command run by `blobleader run`, by cause: exited (on its own), leadership_ended (stopped because leadership ended), shutdown (the supervisor was told to stop).",
		}, []string{"cause"}),
		running: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "blobleader_child_running",
			Help: "1 while the command of `blobleader run` (or any process it started) runs, else 0.",
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
	for _, c := range []string{history.CauseExited, history.CauseLeadershipEnded, history.CauseShutdown, history.CauseGuardLost} {
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
// and observes the elector's events; reachHealth joins /healthz.
func (s *supervisor) mode() mode {
	return mode{
		callbacks:  election.Callbacks{OnStartedLeading: s.lead, OnEvent: s.observe},
		companions: []companion{reachHealth{s}},
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

// stopAtStepDown is how --once stops contending: Run ends once the step-down of
// the leadership that ran the command is recorded, so its reason is the
// command's exit ("task exited…"), not "shutdown".
func (s *supervisor) stopAtStepDown() {
	s.mu.Lock()
	s.lastRun = true
	s.mu.Unlock()
}

// validUntil is the end of leadership term as last known; zero if unknown
// or unbounded (the negative control).
func (s *supervisor) validUntil(term int64) time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.term != term {
		return time.Time{}
	}
	return s.until
}

func (s *supervisor) shutdownBy(sig syscall.Signal) {
	s.mu.Lock()
	if !s.shutdown {
		s.shutdown, s.signal = true, sig
		close(s.quit)
	}
	g, term := s.group, s.groupTerm
	s.mu.Unlock()
	if g == nil {
		s.log.Info("stopping", "signal", sig.String())
		return
	}
	wait := s.grace(term, s.o.shutdownGrace).Round(100 * time.Millisecond)
	s.log.Info(fmt.Sprintf("stopping: waiting up to %s for the command to exit, then SIGKILL; signal again (Ctrl-C) to kill it now", wait),
		"signal", sig.String(), "pid", g.Pid())
}

// catchSignals handles, until the returned stop is called, the signals
// that reach the supervisor: job-control signals are dropped, SIGTERM and
// SIGINT stop it (onSignals).
func (s *supervisor) catchSignals(ctx context.Context) (stop func()) {
	// Job control (^Z, a background read or write): the command is in a
	// process group of its own, so these reach the supervisor alone, and
	// their default action would stop it while its command runs on. They
	// are caught and dropped (caught, not ignored, so the command starts
	// with their default actions).
	jobControl := make(chan os.Signal, 4)
	signal.Notify(jobControl, syscall.SIGTSTP, syscall.SIGTTIN, syscall.SIGTTOU)
	go func() {
		for sig := range jobControl {
			s.log.Warn("ignoring a job-control signal: a supervisor stops only on SIGTERM or SIGINT", "signal", sig.String())
		}
	}()
	// Signals: remember which one came (it is forwarded as it is).
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	go s.onSignals(ctx, sigs)
	return func() {
		signal.Stop(sigs)
		signal.Stop(jobControl)
	}
}

// onSignals stops the supervisor on the first SIGTERM or SIGINT. The
// command's group is stopped first, while we still lead; only once it is
// dead and reaped does the elector hear of the shutdown (cancel) and
// release. A member out of reach keeps us leading until it is gone. Each
// further signal kills the group at once, skipping the rest of the grace.
func (s *supervisor) onSignals(ctx context.Context, sigs <-chan os.Signal) {
	var first os.Signal
	select {
	case first = <-sigs:
	case <-ctx.Done():
		return
	}
	s.shutdownBy(first.(syscall.Signal))
	idle := make(chan struct{})
	go func() { s.awaitIdle(); close(idle) }()
	for {
		select {
		case sig := <-sigs:
			s.killNow(sig)
		case <-idle:
			s.endRun()
			return
		}
	}
}

// killNow SIGKILLs the running group (a second signal while stopping); the
// shutdown goes on as before: reap, then release.
func (s *supervisor) killNow(sig os.Signal) {
	s.mu.Lock()
	g := s.group
	s.mu.Unlock()
	if g == nil {
		return
	}
	err := g.Signal(syscall.SIGKILL)
	s.log.Warn("signalled again while stopping: killed the command (SIGKILL); releasing once it is reaped", "signal", sig.String(), "pid", g.Pid(), "err", err)
}

func (s *supervisor) stopping() (bool, syscall.Signal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.shutdown, s.signal
}

// awaitIdle returns once no command group is left (every member dead and
// reaped). It has no deadline on purpose: while a member out of reach may
// run, the lease is held (docs/failover.md#commands).
func (s *supervisor) awaitIdle() {
	for {
		s.mu.Lock()
		g := s.group
		s.mu.Unlock()
		if g == nil {
			return
		}
		<-g.Done()
		time.Sleep(10 * time.Millisecond) // lead() clears s.group after its report
	}
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
	s.running.Set(1)
	s.n.write(history.NewChildRecord(s.o.identity, processStart, history.ChildEvent{Kind: history.EventChildStarted, Time: time.Now(), Term: term, PID: g.Pid()}))
	log.Info("command started", "pid", g.Pid(), "cgroup", g.Cgroup(), "group", groupMode(g.Cgroup() != ""))

	cause, err := s.watch(ctx, term, g)
	if errors.Is(err, supervise.ErrSurvived) {
		// We cannot prove the command dead. Releasing now would let the next
		// leader start while it may still run; exit and let the lease expire.
		log.Error("the command's process group survived SIGKILL; exiting without releasing the lease (it expires on its own)", "pid", g.Pid(), "err", err)
		s.fatal(1)
		return err
	}
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
	if s.o.once {
		s.stopAtStepDown()
	}
	if err != nil {
		return err
	}
	if cause == history.CauseExited {
		return fmt.Errorf("command %s", st)
	}
	if cause == history.CauseShutdown {
		// The shutdown ends Run once the group is reaped (onSignals): step
		// down as that shutdown, not as a task that exited.
		<-ctx.Done()
	}
	return nil
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
		Guard: s.o.guard, Shim: s.o.guard, Deadline: s.killByLocked(term)})
	if err != nil {
		s.startErr = err
		return nil, err
	}
	s.group, s.groupTerm, s.startErr = g, term, nil
	return g, nil
}

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

// reachHealth is run mode's companion beside the election: /healthz (and
// blobleader_healthy) fail while a member of the command is out of reach,
// and while the command runs without a guard.
// It runs nothing of its own.
type reachHealth struct{ s *supervisor }

// handler answers /healthz 503 while a member is out of reach (the
// contract's handler answers only for the elector), else defers to base.
func (c reachHealth) handler(_ *election.Elector, base http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := c.healthy(); err != nil && r.URL.Path == "/healthz" {
			answerProbe(w, err)
			return
		}
		base.ServeHTTP(w, r)
	})
}

func (c reachHealth) run(ctx context.Context) error {
	<-ctx.Done()
	return nil
}

func (c reachHealth) healthy() error {
	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	if c.s.outOfReach != nil {
		return fmt.Errorf("command out of reach: %w", c.s.outOfReach)
	}
	return c.s.unguarded
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
