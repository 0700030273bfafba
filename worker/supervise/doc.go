// Package supervise runs one command as a supervised process group: the piece
// of `blobleader run` that turns "this process leads" into "this command runs
// only while this process leads".
//
// Start runs the command directly (no shell) in a process group of its own,
// with stdin on /dev/null, stdout and stderr passed through, and the
// environment it is given. Group.Stop ends the whole group: SIGTERM or SIGINT (and
// SIGCONT, so a stopped member can act on it) to every member, a grace period,
// then SIGKILL to the group; it returns only once every member is dead and
// reaped, or reports ErrSurvived after KillTimeout.
//
// # Guarantees (Linux)
//
//   - The command dies with its supervisor: the child gets the parent-death
//     signal SIGKILL (PR_SET_PDEATHSIG). The forking thread stays locked for
//     the child's whole life, because the kernel ties that signal to the
//     thread, not the process.
//   - The supervisor is a child subreaper (PR_SET_CHILD_SUBREAPER): whatever
//     the command forks and leaves behind when it exits is re-parented to the
//     supervisor, not to init, so Stop can kill it and reap it.
//   - "Dead" means reaped: Group.Done is closed only after the command and
//     every member of its process group have been waited for, and no process
//     with that group ID is left (a zombie still counts as present).
//
// # Non-guarantees
//
//   - A process that leaves the group (setsid, setpgid: a daemon that
//     double-forks) is out of reach, as under `consul lock` or `flock`.
//     Commands run under a supervisor must not daemonise.
//   - When the supervisor itself is SIGKILLed, the parent-death signal takes
//     the command, but not what the command forked. With Spec.Guard a guard
//     process (guard.go) covers that: it holds a pipe only the supervisor
//     writes to, and SIGKILLs the group when the pipe closes without the
//     supervisor having said the group ended. Not covered: a fork in the
//     instant between the command's start and the guard learning its group,
//     and a guard killed together with the supervisor (an OOM kill of both,
//     kill -9 of everything): run the supervisor as a container's PID 1 or a
//     systemd service (KillMode=control-group) if that matters.
//   - A process in uninterruptible sleep does not die on SIGKILL until the
//     kernel lets it; Stop then returns ErrSurvived after KillTimeout and the
//     caller must not act as if it were gone.
//
// Elsewhere than Linux, Start returns ErrUnsupported.
package supervise
