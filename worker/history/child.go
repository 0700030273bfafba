package history

import "time"

// The events `blobleader run` adds for its supervised command (additions to
// the history contract, docs/architecture.md#worker-contracts). A command's
// lifetime is [child_started, child_exited]: child_exited is written only once
// the command and every member of its process group are dead and reaped.
const (
	EventChildStarted = "child_started" // {pid, term}
	EventChildExited  = "child_exited"  // {pid, term, exit_code | signal, cause}
)

// Causes of a child_exited: who ended the command.
const (
	// CauseExited: the command ended on its own (any exit code, or a signal
	// the supervisor did not send).
	CauseExited = "exited"
	// CauseLeadershipEnded: the supervisor stopped it because leadership
	// ended (renew deadline, definite loss, watchdog).
	CauseLeadershipEnded = "leadership_ended"
	// CauseShutdown: the supervisor got SIGTERM or SIGINT and stopped it.
	CauseShutdown = "shutdown"
)

// ChildEvent is one event of a supervised command.
type ChildEvent struct {
	Kind string    // EventChildStarted or EventChildExited
	Time time.Time // when it happened (carries the monotonic reading)
	Term int64     // the fencing term the command was started with
	PID  int       // the command's pid (and process group ID)
	// On child_exited: the exit code, or the name of the signal that killed
	// it ("SIGKILL"), and the cause.
	ExitCode int
	Signal   string
	Cause    string
}

// NewChildRecord turns a child event into a record; start is the process
// start time. exit_code is present on child_exited unless a signal ended the
// command, in which case signal is.
func NewChildRecord(identity string, start time.Time, ev ChildEvent) Record {
	r := Record{
		T:        ev.Time.UTC().Format(time.RFC3339Nano),
		MonoNS:   int64(ev.Time.Sub(start)),
		Identity: identity,
		Event:    ev.Kind,
		Term:     ev.Term,
		PID:      ev.PID,
	}
	if ev.Kind == EventChildExited {
		r.Cause = ev.Cause
		if ev.Signal != "" {
			r.Signal = ev.Signal
		} else {
			code := ev.ExitCode
			r.ExitCode = &code
		}
	}
	return r
}

// EventChildOutOfReach: a process the command started cannot be signalled
// by its supervisor (it changed its user); {pid, term, reason}. The
// supervisor holds the lease, never releasing it, until the process is gone.
const EventChildOutOfReach = "child_out_of_reach"

// EventGuardLost: the group guard of a running command died (killed alone);
// {pid, term, reason}: pid is the command's, reason names the dead guard and
// the one started in its place, or why none could be (the supervisor then
// stops the command and releases).
const EventGuardLost = "guard_lost"

// CauseGuardLost: a child_exited cause: the supervisor stopped the command
// because its guard died and no other could be started.
const CauseGuardLost = "guard_lost"

// CauseShimLost: a child_exited cause: the command's shim died before it
// reported the command's end, or was found stopped (it reaps and reports
// nothing); the supervisor stopped what was left of the command and handed
// leadership on.
const CauseShimLost = "shim_lost"
