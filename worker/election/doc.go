// Package election elects one leader among peer processes using a lease on a
// shared object (an Azure Storage blob in production; see package bloblock),
// and runs a task while this process leads.
//
// # Start here
//
// Most services need one call: build a lock on a blob and hand RunTaskWhenLeader
// the task that must run on exactly one instance:
//
//	c, _ := bloblock.NewContainerClient(bloblock.ClientConfig{
//		AccountURL: "https://myacct.blob.core.windows.net", Container: "leases"})
//	lock, _ := bloblock.New(c, "leader")
//	cfg := election.DefaultConfig(hostname)
//	err := election.RunTaskWhenLeader(ctx, cfg, lock, func(ctx context.Context, term int64) error {
//		// ... work until ctx is cancelled; pass term to every side effect ...
//	})
//
// Services that also want to know who leads, or to observe every event, use
// NewElector with Callbacks and Run it. Unit tests use package electiontest
// (an in-memory lock) instead of a blob; package azuritetest starts a real
// Azurite for integration tests. A lock on another store implements the
// contract in package lease.
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
// watchdog steps a leader down when its task stops reporting progress
// (Progress: work that landed), and an elector whose leaderships make none
// backs off, doubling its pause before it contends again up to
// 4·LeaseDuration. Progress is the task's word; a heartbeat is the lease's:
// with early takeover on, a counter the leader writes into the lock's
// record after every renew, whatever its task does.
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
//   - A request sent for one leadership never acts on a later one: every
//     leadership has its own lease ID, so a late renew or release from an
//     ended leadership is refused by storage.
//   - The task's context is cancelled the instant leadership ends, and a task
//     whose leadership lapsed before it could start is never started.
//   - An elector never gives up: transient storage errors (timeouts, 5xx,
//     throttling, 403 while a role assignment propagates) are retried for as
//     long as Run's context lives.
//   - After a crash, a follower leads within LeaseDuration + 1.1·RetryPeriod of
//     the dead leader's last successful renew (plus request time); after a
//     graceful stop, within 1.1·RetryPeriod of the release.
//   - With early takeover (TakeoverAfter > 0, off by default; takeover.go,
//     docs/failover.md#early-takeover) a follower breaks the lease of a
//     leader whose heartbeat it read unchanged for TakeoverAfter on its own
//     clock, with a break period covering the holder's published stop
//     horizon, so nobody acquires before the broken holder has stopped (same
//     clock-rate kind of assumption, a margin of 0.5 s, plus 1 s for
//     storage's whole-second break periods). The break is
//     conditioned on the read that judged the holder (its version), so one
//     that storage receives late never ends a later leadership. A dead leader is
//     replaced within TakeoverAfter + BreakPeriod + 2·1.1·RetryPeriod + 5
//     request timeouts of its last renew. A pause of the follower never
//     counts as staleness.
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
//   - A clock that stops: the deadline runs on the monotonic clock, which on
//     Linux does not advance while a VM is suspended (CLOCK_MONOTONIC stops
//     during system suspend). A whole VM suspended for longer than
//     LeaseDuration − RenewDeadline resumes believing in a leadership whose
//     lease storage has already expired, until its next renew fails (at most
//     RenewInterval + the request timeout). A process pause (SIGSTOP, GC) is
//     covered: the clock keeps running. Fencing keeps side effects safe in
//     both cases.
//   - Terms stay monotonic across storage that forgets — an operator deleting
//     the lock blob or its container, or storage going back in time (an
//     account failover to a geo-replica behind by its replication lag, a
//     point-in-time restore) — only as far as the term floor reaches. Every
//     new term is above the record's, above the highest this process has seen
//     or led, and above the lock's term floor (lease.Lock.TermFloor; bloblock: the
//     wall-clock millisecond at the stamp). The assumption: every term handed
//     out before is below the stamping process's wall clock in milliseconds.
//     That holds while (a) terms do not run ahead of the clock — fewer than
//     one leadership a millisecond, and no operator has set a term above the
//     clock by hand — and (b) no clock that stamped a term was ahead of the
//     clock stamping now by more than the time between the two stamps (skew
//     below the failover or restore time: minutes, against NTP's
//     milliseconds). A node whose clock is set back past that, with no memory
//     of the newer terms, could hand out a term a side-effect store has
//     already seen; the store's fence then refuses it (docs/operations.md).
//   - A record whose term cannot give the next one (not a non-negative
//     integer, or lease.MaxTerm = 2^53 − 1 or more) is never rewritten by an
//     elector and never wrapped: no contender leads until an operator repairs it, and each says
//     so in Healthy, Ready and Status (lease.ErrUnusableRecord).
//   - Storage that answers, but never as the election expects (a 400 from an
//     emulator that does not know the API version, 403, 5xx, no answer at
//     all), is logged (event=storage_error, rate-limited) and named by
//     Ready, never by Healthy: until its first definite answer the elector
//     is starting (Status.Starting), however long that takes, and an outage
//     after storage has answered shows in Ready and the log too. What makes
//     a start that never ends loud is the log and the alerts on it.
//   - Early takeover judges liveness by heartbeats, not by the task's work:
//     a leader whose heartbeat writes fail for TakeoverAfter while its renews
//     succeed is broken (safely), and a leader that heartbeats with a wedged
//     task is the watchdog's to catch. A shorter break by an operator is a
//     forced break, as above.
//   - A late acquire (one delivered after its sender gave up) can create a
//     lease under an ID nobody renews: it costs at most one LeaseDuration of
//     liveness, never safety.
package election
