package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/blobleader/blobleader/worker/supervise"
)

// `blobleader run`: its options (runoptions.go), the supervisor that leads
// (supervisor.go), its watch over the command (watch.go), the signals it
// handles (runsignals.go) and its part of /healthz (runhealth.go).

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
	return o.parsed.explain(superviseRun(o, stderr))
}

// superviseRun contends and supervises o's command (`blobleader run`, and
// `blobleader lock`, which is run --once on a named lock).
func superviseRun(o *runOptions, stderr io.Writer) error {
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
	// Run's context: a shutdown ends it once the command is reaped
	// (onSignals), --once once the command's leadership has stepped down
	// (observe).
	ctx, endRun := context.WithCancel(context.Background())
	defer endRun()
	var s *supervisor
	n, err := openNode(&o.options, o.electionConfig(), stderr, func(n *node) (mode, error) {
		s = newSupervisor(o, n, endRun)
		m := s.mode()
		if o.giveUp != nil { // `blobleader lock --wait/--no-wait` (lockcmd.go)
			m.callbacks.OnEvent = o.giveUp.watch(m.callbacks.OnEvent, endRun)
		}
		return m, nil
	})
	if err != nil {
		return err
	}
	defer n.close()
	defer s.catchSignals(ctx)()
	// The group mode a start will really use: a cgroup is made (and one
	// probed here) only where the shim may move itself into it.
	cgroupKill := supervise.CanKillAnyUser()
	n.log.Info("supervising", "command", o.argv, "path", o.path, "once", o.once, "kill_grace", o.killGrace, "shutdown_grace", o.shutdownGrace,
		"cgroup_kill", cgroupKill, "group", groupMode(cgroupKill))
	for _, l := range supervise.HeldLeftovers() {
		n.log.Warn("a cgroup left behind by a supervisor that is gone still holds processes; whoever killed that supervisor should end them",
			"event", "cgroup_leftover", "cgroup", l.Dir, "processes", l.Processes)
	}
	if err := n.run(ctx); err != nil {
		return err
	}
	if o.giveUp != nil && o.giveUp.gaveUp() {
		return o.giveUp.exit(stderr)
	}
	return s.onceStatus(stderr)
}

// onceStatus is what --once exits with (nil otherwise): the command's
// status, or 126/127 with one line on stderr when it could not be run.
func (s *supervisor) onceStatus(stderr io.Writer) error {
	if !s.o.once {
		return nil
	}
	if err := s.startFailure(); err != nil {
		code := 126 // found but could not be executed, as shells say
		if errors.Is(err, supervise.ErrNotFound) {
			code = 127
		}
		msg := fmt.Sprintf("could not run the command: %s", err)
		fmt.Fprintf(stderr, "blobleader: %s\n", msg)
		return &exitStatusError{code: code, msg: msg}
	}
	if st, ran := s.result(); ran && st.ExitCode() != 0 {
		return &exitStatusError{code: st.ExitCode(), status: st}
	}
	return nil
}
