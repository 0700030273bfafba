// Package election elects one leader among peer processes using a lease on a
// shared object (an Azure Storage blob in production; see package bloblock),
// and runs a task while this process leads.
//
// # How it works
//
// A follower tries to acquire the lease every RetryPeriod (jittered ±10%).
// The winner reads the term from the lock's record, writes term+1 under its
// lease, and from then on leads: the new term is the fencing token passed to
// the task. The leader renews every RenewInterval. Its leadership is valid
// until RenewDeadline after the send time of its last successful renew,
// measured on the monotonic clock; when that moment passes, or storage says
// the lease is gone, it steps down at once: cancels the task, waits (bounded)
// for it, reports OnStoppedLeading. On cancel of Run it stops the task and
// releases the lease so a follower takes over within one poll. A stall
// watchdog steps a leader down when its task stops reporting progress.
//
// # Guarantees
//
//   - At most one elector believes it leads at any instant, provided storage
//     honours leases and each process's clock runs at a rate within
//     SafetyMargin/LeaseDuration of storage's (storage grants the lease no
//     earlier than we sent the request, so it outlasts our deadline by
//     LeaseDuration − RenewDeadline > 2s). IsLeader, Status and the metrics
//     compute the role against the deadline at the moment of asking, so a
//     process resumed after a pause never claims a lapsed leadership.
//   - Terms strictly increase across leaderships, and each is written under
//     the lease that grants it.
//   - An elector never gives up: transient storage errors (timeouts, 5xx,
//     throttling, 403 while a role assignment propagates) are retried for as
//     long as Run's context lives.
//   - After a crash, a follower leads within LeaseDuration + 1.1·RetryPeriod of
//     the dead leader's last successful renew (plus request time); after a
//     graceful stop, within 1.1·RetryPeriod of the release.
//
// # Non-guarantees
//
//   - Belief is not action. A task that started a side effect just before the
//     deadline may see it land just after, and an operator's BreakLease frees
//     the lease while the holder still believes it leads (until its next
//     renew, at most RenewInterval + the request timeout later). Only fencing
//     makes side effects safe: pass the term to every write and let the
//     storage of the side effect refuse a stale term (see package ledger for
//     one way).
//   - Wall clocks play no part in safety, but clock *rate* does: a process
//     whose monotonic clock runs slow by more than the margin can outlive
//     its lease.
//   - A leader whose task ignores cancellation keeps running that task after
//     stepping down; Healthy reports it so an orchestrator can restart the
//     process.
//   - Leadership is not fair: any follower may win a free lease.
package election
