package main

import (
	"errors"
	"flag"
	"io"
	"slices"
	"time"

	"github.com/blobleader/blobleader/worker/election"
	"github.com/blobleader/blobleader/worker/supervise"
)

// `blobleader run`'s command line: the shared flags (options.go), its own,
// the command after "--", and the rules that keep the command killable
// before the lease can expire.

// runOptions are `blobleader run`'s: the election and storage flags every
// mode shares, its own, and the command.
type runOptions struct {
	options
	once      bool          // --once
	killGrace time.Duration // --kill-grace
	argv      []string      // the command and its arguments, as given
	path      string        // the command resolved (supervise.Resolve)
	guard     string        // this binary, the group guard (supervise.Spec.Guard)
	giveUp    *giveUp       // `blobleader lock`: when to stop contending without the lock (lockcmd.go); nil: never
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
    before the lease can expire at storage. With early takeover
    (--takeover-after, --profile fast) the grace comes before the end:
    SIGKILL at the deadline, so a follower may take over right after it.
  - SIGTERM/SIGINT: forwarded to the group; SIGKILL after --shutdown-grace;
    then the lease is released and it exits 0 (with --once: COMMAND's status).
  - The command dies with the supervisor (parent-death signal), and so does
    what it forked (a guard process SIGKILLs the group). Linux only.

Exit codes: 0 clean stop, 2 invalid configuration or command, 1 anything else;
with --once, COMMAND's status once it has run.`

func parseRunOptions(args []string, out io.Writer) (*runOptions, error) {
	o := &runOptions{}
	fs := o.flags("blobleader run", out, runSummary)
	if err := o.parseArgs(fs, args, "blobleader run [flags] -- COMMAND [ARGS...]"); err != nil {
		return nil, err
	}
	if err := o.check(fs); err != nil {
		return nil, err
	}
	return o, nil
}

// flags is a flag set named name with run's flags (and the shared ones)
// registered on o; `blobleader lock` adds its own.
func (o *runOptions) flags(name string, out io.Writer, summary string) *cmdFlags {
	fs := newFlagSet(name, out, summary)
	o.register(fs)
	fs.BoolVar(&o.once, "once", false, "run COMMAND once: when it has exited (or was stopped), release and exit with its status")
	fs.DurationVar(&o.killGrace, "kill-grace", time.Second, "how long COMMAND's group gets between SIGTERM and SIGKILL when its leadership ends; ≤ lease-duration − renew-deadline − 3s; with early takeover the grace comes before the end, and renew-deadline − kill-grace must be ≥ renew-interval + request timeout")
	return fs
}

// parseArgs parses the flags before "--" (usage is the command's usage
// line) and takes the command after it.
func (o *runOptions) parseArgs(fs *cmdFlags, args []string, usage string) error {
	sep := slices.Index(args, "--")
	if sep < 0 {
		for _, a := range args {
			if a == "-h" || a == "-help" || a == "--help" {
				fs.help()
				return flag.ErrHelp
			}
		}
		return usagef("missing -- before the command: %s", usage)
	}
	if err := fs.parse(args[:sep]); err != nil {
		return err
	}
	o.argv = args[sep+1:]
	return nil
}

// check checks the command — present and executable, before we contend —
// then the shared rules, then run's own.
func (o *runOptions) check(fs *cmdFlags) error {
	o.parsed = fs
	if err := o.checkCommand(); err != nil {
		return err
	}
	if err := o.finish(fs); err != nil {
		return fs.explain(err)
	}
	if err := o.validateRun(); err != nil {
		return fs.explain(err)
	}
	return fs.explain(o.requireStorage())
}

// checkCommand resolves the command and refuses, before it can ever run,
// one this supervisor could start but not stop.
func (o *runOptions) checkCommand() error {
	if len(o.argv) == 0 || o.argv[0] == "" {
		return usagef("empty command after --: blobleader run [flags] -- COMMAND [ARGS...]")
	}
	path, err := supervise.Resolve(o.argv[0])
	if err != nil {
		return commandUsage(err)
	}
	o.path = path
	// Set-user-ID to another user, with no cgroup kill: out of reach.
	if err := supervise.CheckReachable(path); err != nil {
		return commandUsage(err)
	}
	// A /proc of another pid namespace: its pids are not ours.
	if why, foreign := supervise.ProcForeign(); foreign {
		return usagef("cannot supervise a command here: %s, so the command's processes could not be told from others; give the supervisor a /proc of its own pid namespace (unshare --pid --fork --mount-proc, or mount -t proc proc /proc inside it)", why)
	}
	// A /proc that hides processes from us (hidepid) and no cgroup: a member
	// we cannot see would be taken for gone.
	if why, hidden := supervise.ProcHidden(); hidden && !supervise.CanKillAnyUser() {
		return usagef("cannot supervise a command here: %s, and this supervisor cannot make a cgroup of its own (cgroup v2 with cgroup.kill, writable: root or a delegated cgroup), so it could not see every process of the command; give it a writable cgroup (systemd Delegate=yes) or a /proc without hidepid", why)
	}
	return nil
}

// commandUsage is the refusal of a command that cannot be supervised.
func commandUsage(err error) error {
	var ce *supervise.CommandError
	if errors.As(err, &ce) {
		return usagef("invalid command: %s: %s", ce.Problem, ce.Detail)
	}
	return usagef("invalid command: %v", err)
}

// validateRun checks that the command can always be stopped before anyone
// else can start one (docs/failover.md, "Commands"). Without early
// takeover that is before the lease can expire at storage: stopped at the
// renew deadline D at the latest, it gets kill-grace for SIGTERM and
// supervise.KillTimeout for SIGKILL and the reap, and all of it must fit in
// L − D less the safety margin the election keeps for clock-rate drift.
// With early takeover a follower may break the lease as soon as the
// leader's published horizon (D + request timeout) has passed, so the
// command is SIGKILLed by the end of its leadership and its grace comes
// before (watch.go): the window left to it, D − kill-grace, must hold one
// heartbeat cycle answered within the timeout, or a healthy leader would
// stop its own command.
func (o *runOptions) validateRun() error {
	budget := o.timing.LeaseDuration - o.timing.RenewDeadline - election.SafetyMargin - supervise.KillTimeout
	switch {
	case budget < 0:
		return usagef("invalid %s %s for run: must be at most lease-duration − %s (%s), so that the command can be killed and reaped (%s) within the %s safety margin before the lease can expire",
			flagRef("renew-deadline"), o.timing.RenewDeadline, election.SafetyMargin+supervise.KillTimeout, o.timing.LeaseDuration-election.SafetyMargin-supervise.KillTimeout, supervise.KillTimeout, election.SafetyMargin)
	case o.killGrace < 0:
		return usagef("invalid %s %s: must be ≥ 0 (0: SIGKILL at once)", flagRef("kill-grace"), o.killGrace)
	case o.killGrace > budget:
		return usagef("invalid %s %s: must be at most lease-duration − renew-deadline − %s safety margin − %s for SIGKILL and the reap (%s), so that the command is dead before the lease can expire; lower %s or %s",
			flagRef("kill-grace"), o.killGrace, election.SafetyMargin, supervise.KillTimeout, budget, flagRef("kill-grace"), flagRef("renew-deadline"))
	}
	if c := o.electionConfig(); o.graceInside() {
		if window, cycle := c.RenewDeadline-o.killGrace, c.RenewInterval+c.RequestTimeout(); window < cycle {
			return usagef("invalid %s %s with %s %s: with early takeover the command is SIGKILLed by the end of its leadership and gets its grace before it, so %s − %s (%s) must be at least %s + request timeout (%s), one heartbeat cycle, or a healthy leader stops its own command; lower %s or raise %s",
				flagRef("kill-grace"), o.killGrace, flagRef("takeover-after"), c.TakeoverAfter, flagRef("renew-deadline"), flagRef("kill-grace"), window, flagRef("renew-interval"), cycle, flagRef("kill-grace"), flagRef("renew-deadline"))
		}
	}
	if err := o.electionConfig().Validate(); err != nil {
		return configUsage(err, electionFlags)
	}
	return nil
}

// graceInside says whether the command's kill grace comes before the end
// of its leadership rather than after: with early takeover, where a
// follower may break the lease once the leader's published horizon has
// passed (watch.go, docs/failover.md#early-takeover).
func (o *runOptions) graceInside() bool { return o.takeover.takeoverAfter > 0 }

// electionConfig is run's election: the shared one, published as run's
// mode.
func (o *runOptions) electionConfig() election.Config {
	c := o.options.electionConfig()
	c.Mode = modeRun
	// With early takeover the command is SIGKILLed by the deadline
	// (graceInside), and the signal reaches every member within the
	// request timeout the published horizon already counts: nothing of it
	// acts after the deadline, as for the worker's task
	// (StopAfterDeadline 0). Without, no horizon is published.
	// The elector waits for its task up to ShutdownGrace before it
	// releases: longer than the group's Stop can take (the grace, then
	// KillTimeout and DyingTimeout), so a release never comes while Stop
	// still waits for the group. A shutdown is done before the elector
	// hears of it (supervisor.onSignals), so this is only a backstop.
	c.ShutdownGrace = max(o.shutdownGrace, o.killGrace) + supervise.KillTimeout + supervise.DyingTimeout + time.Second
	return c
}
