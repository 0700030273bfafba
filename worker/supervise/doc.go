// Package supervise runs one command as a supervised group: the piece of
// `blobleader run` that turns "this process leads" into "this command runs
// only while this process leads".
//
// Start runs the command directly (no shell) in a process group of its own
// (and, where it can, a cgroup of its own), with stdin on /dev/null, stdout
// and stderr passed through, and the environment it is given. Its parent is
// a shim of the caller's binary (Spec.Shim, shim_linux.go): the child
// subreaper of the command's lineage, which joins the cgroup before it
// forks the command (no clone3). The group is everything the command
// starts: its cgroup's whole subtree (the cgroups it nests included), every
// process below the shim (below the supervisor once the shim is dead),
// whatever process group or session it moved to, and its process group.
// The supervisor, the guard and the shim speak the protocol of
// protocol_linux.go and kill with the one loop of kill_linux.go. An orphan
// the supervisor adopts that the command never started (as pid 1, or as a
// subreaper) is no member; the supervisor reaps it. Group.Stop ends the whole group: SIGTERM or
// SIGINT (and SIGCONT, so a stopped member can act on it) to every member, a
// grace period, then SIGKILL (cgroup.kill first); it returns within grace +
// KillTimeout, or up to DyingTimeout later while what is left only waits
// for the CPU (members the kill has taken, the group's shim and guard): nil
// once every member is dead and reaped, ErrOutOfReach when a member may not
// be signalled (it changed its user), ErrSurvived when one outlived
// SIGKILL or the group was not gone in time.
//
// # Guarantees (Linux)
//
//   - The command dies with its supervisor: the shim sees its control pipe
//     close and SIGKILLs the whole lineage; the command also gets the
//     parent-death signal SIGKILL (PR_SET_PDEATHSIG) as the shim dies. The
//     shim's forking thread stays locked for the command's whole life,
//     because the kernel ties that signal to the thread, not the process.
//   - The shim holds the deadline too (Spec.Deadline, Group.Extend): a
//     guard killed alone, even as its supervisor freezes, leaves it held.
//   - "Dead" means reaped, and proven: Group.Done is closed only once no
//     member is alive and every member that was the supervisor's child has
//     been waited for, shown by the kernel's count (cgroup.events) or by the
//     lineage's subreaper having no live child — never by a reading of /proc
//     that saw nothing, which a process forking, calling setsid and exiting
//     faster than the reading escapes. Every kill loop (Stop's, the guard's,
//     the shim's) runs until that proof; the guard's and the shim's never
//     give up.
//   - The shim is watched: ShimStopped and ShimLost tell the supervisor that
//     it can no longer learn of the command's end from it; Stop continues
//     a stopped shim, and kills it if it stays stopped. A guard stopped at
//     the group's end is continued, and killed if stopped again.
//   - With Spec.Guard, a guard process (guard.go) outlives a stuck or dead
//     supervisor: it SIGKILLs the group when the supervisor dies without
//     saying the group ended, and, with Spec.Deadline, when the supervisor
//     does not extend the deadline in time (Group.Extend): a frozen, blocked
//     or stopped supervisor's command dies by the deadline all the same. A
//     guard that dies is replaced at once with what is left of the deadline
//     (Group.GuardLost reports it, and when no guard could be started).
//   - Guard and shim catch SIGPIPE and never wait on their output: the
//     guard kills first and reports after, through a bounded queue.
//   - Under a /proc that hides processes (hidepid), the group is a cgroup or
//     Start refuses (ErrProcHidden): a member it cannot see is never taken
//     for gone. Under a /proc of another pid namespace Start refuses
//     (ErrProcForeign): its pids are not this process's.
//   - The guard's and the shim's process names (comm) are not the binary's,
//     so killall or pkill by the binary's name reach the supervisor alone.
//   - With a cgroup (cgroup v2 with cgroup.kill, writable: root or a
//     delegated cgroup), cgroup.kill reaches every member whatever its user,
//     and nothing leaves the cgroup without write access to the hierarchy.
//
// # Non-guarantees
//
//   - Without a cgroup, a process that is not below the supervisor (started
//     through another service, or re-parented away) is out of reach, and so
//     is a member of another user under an unprivileged supervisor
//     (Group.CheckReach finds it; CheckReachable refuses set-user-ID
//     commands up front).
//   - A guard killed together with the supervisor (and the shim) leaves
//     what the command forked to the parent-death signal of the command
//     alone; a guard killed while the supervisor is frozen is replaced only
//     once the supervisor runs again. Without a cgroup, a supervisor and a
//     shim killed together hand the lineage to whoever is above the
//     supervisor: the guard then reaches only what it last noted (every
//     100 ms) and what those start.
//   - Supervisor, guard and shim stopped together (not by name: each by
//     pid, or by their command lines) hold no deadline until continued.
//   - A process in uninterruptible sleep does not die on SIGKILL until the
//     kernel lets it; Stop then returns ErrSurvived soon after KillTimeout
//     (the member in D at two looks 100 ms apart) and the caller must not
//     act as if it were gone.
//
// docs/failover.md ("Commands") states the bounds and the escapes that
// remain. Elsewhere than Linux, Start returns ErrUnsupported.
package supervise
