package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"slices"
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

// runOptions are `blobleader run`'s: the election and storage flags every
// mode shares, its own, and the command.
type runOptions struct {
	options
	once      bool
	killGrace time.Duration
	argv      []string // the command and its arguments, as given
	path      string   // the command resolved (supervise.Resolve)
	guard     string   // this binary, the group guard (supervise.Spec.Guard)
}

const runSummary = `blobleader run — run COMMAND only while this process leads: the fleet's singleton.

Usage:
  blobleader run [flags] -- COMMAND [ARGS...]

Contends for the lease like the worker. While leading it runs COMMAND with ARGS
(no shell) in its own process group, stdin closed, stdout and stderr passed
through, with BLOBLEADER_TERM (the fencing term) and BLOBLEADER_IDENTITY added
to its environment.
  - COMMAND exits (any code, any signal): the lease is released at once; after
    the hand-off pause (2 × retry-period) it contends again, and runs COMMAND
    again when it leads again. With --once it exits with COMMAND's status
    (128 + the signal if a signal ended it).
  - Leadership ends (renew deadline, lease lost, watchdog): SIGTERM to the
    group, SIGKILL after --kill-grace; the whole group is dead and reaped
    before the lease can expire at storage.
  - SIGTERM/SIGINT: forwarded to the group; SIGKILL after --shutdown-grace;
    then the lease is released and it exits 0 (with --once: COMMAND's status).
  - The command dies with the supervisor (parent-death signal), and so does
    what it forked (a guard process SIGKILLs the group). Linux only.

Exit codes: 0 clean stop, 2 invalid configuration or command, 1 anything else;
with --once, COMMAND's status once it has run.`

func parseRunOptions(args []string, out io.Writer) (*runOptions, error) {
	o := &runOptions{}
	fs := newFlagSet("blobleader run", out, runSummary)
	o.register(fs)
	fs.BoolVar(&o.once, "once", false, "run COMMAND once: when it has exited (or was stopped), release and exit with its status")
	fs.DurationVar(&o.killGrace, "kill-grace", time.Second, "when leadership ends: how long COMMAND's group gets between SIGTERM and SIGKILL; ≤ lease-duration − renew-deadline − 3s")

	// 1. Flags before "--", the command after it.
	sep := slices.Index(args, "--")
	if sep < 0 {
		for _, a := range args {
			if a == "-h" || a == "-help" || a == "--help" {
				fs.Usage()
				return nil, flag.ErrHelp
			}
		}
		return nil, usagef("missing -- before the command: blobleader run [flags] -- COMMAND [ARGS...]")
	}
	if err := parse(fs, args[:sep]); err != nil {
		return nil, err
	}
	o.argv = args[sep+1:]
	// 2. The command: present and executable, before we contend.
	if len(o.argv) == 0 || o.argv[0] == "" {
		return nil, usagef("empty command after --: blobleader run [flags] -- COMMAND [ARGS...]")
	}
	path, err := supervise.Resolve(o.argv[0])
	if err != nil {
		return nil, usagef("invalid command: %s", strings.TrimPrefix(err.Error(), "supervise: "))
	}
	o.path = path
	// 3. The shared rules, then run's own.
	if err := o.finish(fs); err != nil {
		return nil, err
	}
	return o, o.validateRun()
}

// validateRun checks that the command can always be stopped before the lease
// can expire at storage (docs/failover.md, "Commands"): stopped at the
// renew deadline D at the latest, it gets kill-grace for SIGTERM and
// supervise.KillTimeout for SIGKILL and the reap, and all of it must fit in
// L − D less the safety margin the election keeps for clock-rate drift.
func (o *runOptions) validateRun() error {
	budget := o.timing.LeaseDuration - o.timing.RenewDeadline - election.SafetyMargin - supervise.KillTimeout
	switch {
	case budget < 0:
		return usagef("invalid --renew-deadline %s for run: must be at most lease-duration − %s (%s), so that the command can be killed and reaped (%s) within the %s safety margin before the lease can expire",
			o.timing.RenewDeadline, election.SafetyMargin+supervise.KillTimeout, o.timing.LeaseDuration-election.SafetyMargin-supervise.KillTimeout, supervise.KillTimeout, election.SafetyMargin)
	case o.killGrace < 0:
		return usagef("invalid --kill-grace %s: must be ≥ 0 (0: SIGKILL at once)", o.killGrace)
	case o.killGrace > budget:
		return usagef("invalid --kill-grace %s: must be at most lease-duration − renew-deadline − %s safety margin − %s for SIGKILL and the reap (%s), so that the command is dead before the lease can expire; lower --kill-grace or --renew-deadline",
			o.killGrace, election.SafetyMargin, supervise.KillTimeout, budget)
	}
	return o.validateTakeover()
}

// exitStatusError carries --once's exit status (the command's) to main.
type exitStatusError struct {
	code   int
	status supervise.ExitStatus
}

func (e *exitStatusError) Error() string { return "command " + e.status.String() }

func runRun(args []string, stdout, stderr io.Writer) error {
	o, err := parseRunOptions(args, stdout)
	if err != nil {
		return err
	}
	if err := supervise.EnableSubreaper(); err != nil {
		return err
	}
	// This binary is also the group guard (main runs it as GuardName): it
	// kills what the command forked should we be SIGKILLed.
	guard, err := os.Executable()
	if err != nil {
		return fmt.Errorf("find our own executable for the group guard: %w", err)
	}
	o.guard = guard
	n, err := openNode(&o.options, stderr)
	if err != nil {
		return err
	}
	defer n.close()
	// The elector waits for its task up to ShutdownGrace before it releases
	// the lease. The task returns only once the command's group is reaped,
	// within the longer grace + KillTimeout; the elector must never release
	// while the command may still run.
	n.cfg.ShutdownGrace = max(o.shutdownGrace, o.killGrace) + supervise.KillTimeout + time.Second
	// Early takeover: the break period must cover the command's end too.
	n.cfg.StopAfterDeadline = runStopAfterDeadline(o.killGrace)

	// Signals: remember which one came (it is forwarded as it is).
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	defer signal.Stop(sigs)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := newSupervisor(o, n)
	go func() {
		select {
		case sig := <-sigs:
			s.shutdownBy(sig.(syscall.Signal))
			cancel()
		case <-ctx.Done():
		}
	}()
	s.stopContending = cancel

	if _, err := n.newElector(election.Callbacks{OnStartedLeading: s.lead, OnEvent: s.observe}); err != nil {
		return err
	}
	n.log.Info("supervising", "command", o.argv, "path", o.path, "once", o.once, "kill_grace", o.killGrace, "shutdown_grace", o.shutdownGrace)
	if err := n.serve(ctx); err != nil {
		return err
	}
	if st, ran := s.result(); o.once && ran && st.ExitCode() != 0 {
		return &exitStatusError{code: st.ExitCode(), status: st}
	}
	return nil
}

// supervisor is the leader task of `blobleader run`: it runs the command for
// as long as the leadership lasts, and no longer.
type supervisor struct {
	o              *runOptions
	n              *node
	log            *slog.Logger
	exits          *prometheus.CounterVec
	running        prometheus.Gauge
	stopContending context.CancelFunc // --once: end Run after the command
	// fatal ends the process without releasing the lease (a group that
	// survived SIGKILL must not be followed by a release).
	fatal func(code int)

	mu       sync.Mutex
	term     int64     // the leadership validUntil belongs to
	until    time.Time // its end as last known (started_leading, renewed); monotonic
	signal   syscall.Signal
	status   supervise.ExitStatus // the last command's
	ran      bool                 // a command has run
	shutdown bool
}

func newSupervisor(o *runOptions, n *node) *supervisor {
	s := &supervisor{o: o, n: n, log: n.log, fatal: os.Exit, signal: syscall.SIGTERM,
		exits: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "blobleader_child_exits_total",
			Help: "Exits of the command run by `blobleader run`, by cause: exited (on its own), leadership_ended (stopped because leadership ended), shutdown (the supervisor was told to stop).",
		}, []string{"cause"}),
		running: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "blobleader_child_running",
			Help: "1 while the command of `blobleader run` (or any process of its group) runs, else 0.",
		}),
	}
	for _, c := range []string{history.CauseExited, history.CauseLeadershipEnded, history.CauseShutdown} {
		s.exits.WithLabelValues(c)
	}
	n.metrics.Registry.MustRegister(s.exits, s.running)
	return s
}

// observe tracks the end of the current leadership from the elector's
// events, so the command's kill can be timed against it even if the
// elector's own step-down comes late.
func (s *supervisor) observe(ev election.Event) {
	switch ev.Kind {
	case election.EventStartedLeading, election.EventRenewed:
		s.mu.Lock()
		if ev.Term != s.term || ev.ValidUntil.After(s.until) {
			s.term, s.until = ev.Term, ev.ValidUntil
		}
		s.mu.Unlock()
	}
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
	s.shutdown, s.signal = true, sig
	s.mu.Unlock()
	s.log.Info("stopping", "signal", sig.String())
}

func (s *supervisor) stopping() (bool, syscall.Signal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.shutdown, s.signal
}

func (s *supervisor) result() (supervise.ExitStatus, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.status, s.ran
}

// lead is OnStartedLeading: start the command, watch it, and return once it
// and its whole group are dead and reaped.
func (s *supervisor) lead(ctx context.Context, term int64) error {
	log := s.log.With("term", term)
	g, err := supervise.Start(supervise.Spec{Path: s.o.path, Args: s.o.argv, Env: commandEnv(os.Environ(), term, s.o.identity), Guard: s.o.guard})
	if err != nil {
		log.Error("could not start the command; handing leadership on", "err", err)
		if s.o.once {
			s.stopContending()
		}
		return err
	}
	s.running.Set(1)
	s.n.write(history.NewChildRecord(s.o.identity, processStart, history.ChildEvent{Kind: history.EventChildStarted, Time: time.Now(), Term: term, PID: g.Pid()}))
	log.Info("command started", "pid", g.Pid())

	cause, err := s.watch(ctx, term, g)
	if errors.Is(err, supervise.ErrSurvived) {
		// We cannot prove the command dead. Releasing now would let the next
		// leader start while it may still run; exit and let the lease expire.
		log.Error("the command's process group survived SIGKILL; exiting without releasing the lease (it expires on its own)", "pid", g.Pid(), "err", err)
		s.fatal(1)
		return err
	}
	st := g.Status()
	s.running.Set(0)
	s.exits.WithLabelValues(cause).Inc()
	s.n.write(history.NewChildRecord(s.o.identity, processStart, history.ChildEvent{Kind: history.EventChildExited, Time: time.Now(), Term: term, PID: g.Pid(),
		ExitCode: st.Code, Signal: st.SignalName(), Cause: cause}))
	log.Info("command exited", "pid", g.Pid(), "status", st.String(), "cause", cause)
	s.mu.Lock()
	s.status, s.ran = st, true
	s.mu.Unlock()
	if s.o.once {
		s.stopContending()
	}
	if err != nil {
		return err
	}
	if cause == history.CauseExited {
		return fmt.Errorf("command %s", st)
	}
	return nil
}

// watch waits for the command to exit or for leadership to end, stops the
// whole group, and says why it ended. It returns only once the group is
// reaped (or ErrSurvived).
func (s *supervisor) watch(ctx context.Context, term int64, g *supervise.Group) (cause string, err error) {
	// The command cannot heartbeat the stall watchdog; we do while it lives.
	beat := time.NewTicker(max(s.n.cfg.RenewInterval/2, 10*time.Millisecond))
	defer beat.Stop()
	// Our own watch on the leadership's end: the command is stopped at the
	// deadline even if the elector's cancel comes later.
	lapse := time.NewTimer(time.Hour)
	defer lapse.Stop()
	arm := func() {
		if vu := s.validUntil(term); !vu.IsZero() {
			lapse.Reset(time.Until(vu))
		}
	}
	arm()
	for {
		select {
		case <-g.Exited():
			// On its own: take whatever it left in its group with it.
			return history.CauseExited, g.Stop(syscall.SIGTERM, s.grace(term, s.o.killGrace))
		case <-ctx.Done():
			if shutdown, sig := s.stopping(); shutdown {
				return history.CauseShutdown, g.Stop(sig, s.grace(term, s.o.shutdownGrace))
			}
			return history.CauseLeadershipEnded, g.Stop(syscall.SIGTERM, s.grace(term, s.o.killGrace))
		case <-lapse.C:
			vu := s.validUntil(term)
			if vu.IsZero() || time.Now().Before(vu) {
				arm() // renewed since: wait for the new end
				continue
			}
			err := g.Stop(syscall.SIGTERM, s.grace(term, s.o.killGrace)) // act first, report after
			s.log.Warn("leadership lapsed before the elector said so; stopped the command", "term", term, "err", err)
			return history.CauseLeadershipEnded, err
		case <-beat.C:
			election.Heartbeat(ctx)
		}
	}
}

// grace is how long the group may take to act on SIGTERM: want, but never
// past the leadership's end + kill-grace. So the group is reaped by
// validUntil + kill-grace + KillTimeout ≤ (last renew sent) + L − safety
// margin, before the lease can expire at storage, whatever stopped it and
// however late (validateRun). Zero or less means SIGKILL at once.
func (s *supervisor) grace(term int64, want time.Duration) time.Duration {
	vu := s.validUntil(term)
	if vu.IsZero() {
		return want
	}
	return min(want, time.Until(vu)+s.o.killGrace)
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
