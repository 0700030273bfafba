package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"
)

// The signals that reach `blobleader run`'s supervisor: job-control signals
// are dropped; the first SIGTERM or SIGINT stops the command's group while
// we still lead, then ends Run (the elector releases); each further one
// kills the group at once (docs/architecture.md#worker-contracts, run mode).

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
// dead and reaped does the elector hear of the shutdown (endRun) and
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

// shutdownBy starts the shutdown for sig (the first signal): the watch
// stops the command's group with sig, and a stopping supervisor says how
// long it waits.
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

// stopping says whether a shutdown began, and the signal that began it.
func (s *supervisor) stopping() (bool, syscall.Signal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.shutdown, s.signal
}

// awaitIdle returns once no command group is left (every member dead and
// reaped). It has no deadline on purpose: while a member out of reach may
// run, the lease is held (docs/failover.md#commands-under-blobleader-run).
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
