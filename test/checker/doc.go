// Package checker decides whether one chaos run kept the election's promises
// (docs/chaos.md#checker-rules). It is pure: it reads the workers' merged JSONL histories, the
// ledger read back from storage, the faults the harness injected and the
// cluster's view of its workers at run end, and reports violations of
//
//   - S1: leadership belief intervals of different terms never overlap;
//   - Forced break: after an operator's BreakLease, or the deletion of the
//     lock blob or its container, the old holder's belief may overlap the
//     next leader's, but must end within one renew interval plus the request
//     timeout of the fault (this pair is judged by this rule, not by S1);
//   - S2: terms strictly increase, no term is started twice, and the ledger
//     starts at seq 1 and has no gaps, duplicates, decreasing terms, foreign
//     terms or entries written after their term's belief ended;
//   - L1: a fault that hit the leader is followed by a new leader within the
//     bound docs/failover.md#liveness-how-long-until-a-new-leader gives for
//     that fault;
//   - L2: every live worker still contends at run end;
//   - evidence: every worker the cluster started left a history, and the run
//     holds the minimum evidence its scenario requires (Run.Requires).
//
// Every violation quotes the offending history lines with their file:line.
//
// # Verdicts
//
// A run passes with no violation and a complete history; it fails with any
// violation. A run whose history a sink announced as incomplete (a
// history_dropped record) and that has no violation is inconclusive:
// Result.Outcome says so, Result.OK is false and Result.Err wraps
// ErrInconclusive — never a pass. Records repeated by a re-flushed history
// segment (same identity, process start t − mono_ns, event, term and time)
// are judged once.
//
// In run mode (`blobleader run -- COMMAND`) the actors are the commands:
// CheckCommands judges S1 over command lifetimes, S2 over the terms the
// commands write to their own ledger, a freeze rule and the fast hand-over
// after a command's own exit (commands.go has the exact rules, including
// the named exceptions a scenario may declare: a supervisor paused alone,
// an operator's forced break).
//
// # Belief intervals
//
// A worker believes it leads term T from its started_leading event until the
// earliest of: its stopped_leading for T and the latest valid_until it logged
// for T. Only a belief without any valid_until (the --unsafe-no-step-down
// negative control) is also ended by the time the harness SIGKILLed it (a
// crash fault): the fault is stamped by the harness before the kill lands
// (on Azure, before an ARM stop of several seconds), so capping a belief the
// worker itself bounded could hide an overlap. A belief with no end at all
// lasts until the run ends. A paused worker needs no special case:
// valid_until already ends its belief at its deadline.
//
// # L1 bounds
//
// Only a fault that hit the leader of the moment demands a failover. With
// R = P·1.1 + ε (a follower's worst poll gap plus the acquire's own work):
//
//	crash      next started_leading ≤ last renew sent + L + R   (last renew sent = latest valid_until − D)
//	pause      same as crash, unless resumed before its valid_until
//	graceful   next started_leading ≤ released + R              (crash bound if it logged no `released`)
//	break, delete_blob, delete_container
//	           next started_leading ≤ the fault + R
//	latency, timeout, reset, partition, outage, late_delivery
//	           a leader exists (belief covering End, or next start) ≤ End + L + R
//
// A leader that logged no valid_until has its bound counted from the fault.
// A lost_response fault demands nothing itself; each one in a failover's
// window adds R to that failover's deadline (one more poll for the contender
// whose answer was lost), never L: a ghost lease is an L1 violation.
//
// # Clocks
//
// Worker events carry each worker's wall clock; faults carry the harness's.
// Params.ClockSkew is the tolerance allowed wherever two different clocks are
// compared (0 when everything runs on one machine). Overlaps and bound
// overruns no larger than ClockSkew are not violations.
//
// # What it does not check
//
//   - Anything that is not in the history: a worker that acts without logging
//     is invisible. The ledger is the independent witness for the reference
//     task, and it is only as complete as the storage read that produced it.
//   - L1 for a fault whose failover window is still open when the run ends, or
//     that overlaps a fault that is never healed: the Failover is reported
//     with Inconclusive set and no violation (the run cannot tell).
//   - Which workers were alive when: a fault that left no worker able to take
//     over still yields an L1 violation; the harness must not demand a
//     failover it made impossible. Other faults active during a failover
//     window (an outage, a partition or pause of any worker) stretch its
//     deadline to their end + L + P·1.1 + ε, which is lenient on purpose.
//   - L1 for faults that did not hit the leader when injected (a follower's
//     crash, pause or partition): they demand nothing.
package checker
