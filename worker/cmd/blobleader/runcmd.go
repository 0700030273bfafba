package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/blobleader/blobleader/worker/election"
	"github.com/blobleader/blobleader/worker/supervise"
)

// `blobleader run`: the wiring of flags (runoptions.go), the supervisor that
// leads (supervisor.go) and its watch over the command (watch.go).

// exitStatusError carries --once's exit status (the command's, or 126/127
// when it could not be run) to main.
type exitStatusError struct {
	code   int
	status supervise.ExitStatus
	msg    string // set when the command could not be run
}

func (e *exitStatusError) Error() string {
	if e.msg != "" {
		return e.msg
	}
	return "command " + e.status.String()
}

// groupMode names how a command's group is tracked: "cgroup" (its own
// cgroup, cgroup.kill) or "tree" (the shim's process tree).
func groupMode(cgroup bool) string {
	if cgroup {
		return "cgroup"
	}
	return "tree"
}

func runRun(args []string, stdout, stderr io.Writer) error {
	o, err := parseRunOptions(args, stdout)
	if err != nil {
		return err
	}
	if err := supervise.EnableSubreaper(); err != nil {
		return err
	}
	// This binary is also the group guard (main runs it as GuardName): it
	// kills what the command forked should we be SIGKILLed, and the whole
	// group when we miss the leadership's deadline (frozen, blocked).
	guard, err := os.Executable()
	if err != nil {
		return fmt.Errorf("find our own executable for the group guard: %w", err)
	}
	o.guard = guard
	n, err := openNode(&o.options, o.electionConfig(), stderr)
	if err != nil {
		return err
	}
	defer n.close()
	// Job control (^Z, a background read or write): the command is in a
	// process group of its own, so these reach the supervisor alone, and
	// their default action would stop it while its command runs on. They
	// are caught and dropped (caught, not ignored, so the command starts
	// with their default actions).
	jobControl := make(chan os.Signal, 4)
	signal.Notify(jobControl, syscall.SIGTSTP, syscall.SIGTTIN, syscall.SIGTTOU)
	defer signal.Stop(jobControl)
	go func() {
		for sig := range jobControl {
			n.log.Warn("ignoring a job-control signal: a supervisor stops only on SIGTERM or SIGINT", "signal", sig.String())
		}
	}()

	// Signals: remember which one came (it is forwarded as it is).
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	defer signal.Stop(sigs)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := newSupervisor(o, n)
	s.endRun = cancel
	s.stopContending = s.stopAtStepDown
	go s.onSignals(ctx, sigs, cancel)

	if _, err := n.newElector(election.Callbacks{OnStartedLeading: s.lead, OnEvent: s.observe}); err != nil {
		return err
	}
	// The group mode a start will really use: a cgroup is made (and one
	// probed here) only where the shim may move itself into it.
	cgroupKill := supervise.CanKillAnyUser()
	n.log.Info("supervising", "command", o.argv, "path", o.path, "once", o.once, "kill_grace", o.killGrace, "shutdown_grace", o.shutdownGrace,
		"cgroup_kill", cgroupKill, "group", groupMode(cgroupKill))
	if err := n.serve(ctx, reachHealth{s}); err != nil {
		return err
	}
	if err := s.startFailure(); o.once && err != nil {
		code := 126 // found but could not be executed, as shells say
		if errors.Is(err, supervise.ErrNotFound) {
			code = 127
		}
		msg := fmt.Sprintf("could not run the command: %s", err)
		fmt.Fprintf(stderr, "blobleader: %s\n", msg)
		return &exitStatusError{code: code, msg: msg}
	}
	if st, ran := s.result(); o.once && ran && st.ExitCode() != 0 {
		return &exitStatusError{code: st.ExitCode(), status: st}
	}
	return nil
}
