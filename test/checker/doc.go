// Package checker decides whether one chaos run kept the election's promises
// (DESIGN §2). It is pure: it reads the workers' merged JSONL histories, the
// ledger read back from storage, the faults the harness injected and the
// cluster's view of its workers at run end, and reports violations of
//
//   - S1: leadership belief intervals of different terms never overlap;
//   - Forced break: after an operator's BreakLease the old holder's belief
//     may overlap the next leader's, but must end within one renew interval
//     plus the request timeout of the break (this pair is judged by this rule,
//     not by S1);
//   - S2: terms strictly increase, no term is started twice, and the ledger
//     has no gaps, duplicates, decreasing terms, foreign terms or entries
//     written after their term's belief ended;
//   - L1: a fault that hit the leader is followed by a new leader within the
//     bound DESIGN §2 gives for that fault;
//   - L2: every live worker still contends at run end.
//
// Every violation quotes the offending history lines with their file:line.
//
// In run mode (`blobleader run -- COMMAND`) the actors are the commands:
// CheckCommands judges S1 over command lifetimes, S2 over the terms the
// commands write to their own ledger, a freeze rule and the fast hand-over
// after a command's own exit (commands.go has the exact rules, including
// the one named exception, a supervisor paused alone).
//
// # Belief intervals
//
// A worker believes it leads term T from its started_leading event until the
// earliest of: its stopped_leading for T, the latest valid_until it logged for
// T, and the time the harness SIGKILLed it (a crash fault). A belief with no
// such end (a worker that logs no valid_until, like the --unsafe-no-step-down
// negative control) lasts until the run ends. A paused worker needs no special
// case: valid_until already ends its belief at its deadline.
//
// # L1 bounds
//
// Only a fault that hit the leader of the moment demands a failover. With
// R = P·1.1 + ε (a follower's worst poll gap plus the acquire's own work):
//
//	crash      next started_leading ≤ last renew sent + L + R   (last renew sent = latest valid_until − D)
//	pause      same as crash, unless resumed before its valid_until
//	graceful   next started_leading ≤ released + R              (crash bound if it logged no `released`)
//	break      next started_leading ≤ break + R
//	latency, timeout, reset, partition, outage
//	           a leader exists (belief covering End, or next start) ≤ End + L + R
//
// A leader that logged no valid_until has its bound counted from the fault.
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
