// Package checker decides whether one chaos run kept the election's promises
// (docs/chaos.md#checker-rules). It is pure: it reads the workers' merged
// JSONL histories, the ledger read back from storage, the faults the harness
// injected and the cluster's view of its workers at run end, and returns a
// Verdict with every violation quoting the offending history lines
// (file:line and the line as read).
//
// # Checkers and rules
//
// Each rule is one function, and the rule's text — what it asserts and its
// bound — is that function's doc comment, as jepsen keeps each checker's
// docstring with it:
//
//   - Check judges the election: belief intervals (intervals), S1 (checkS1),
//     the forced-break rule (checkBreaks), early takeover (checkTakeovers),
//     S2 on terms and the ledger (checkTerms, checkLedger), L1
//     (checkFailovers), L2 (checkContending), keep (checkKept) and the
//     evidence rules (checkHistories, checkRequirements, checkDropped).
//   - CheckCommands judges the commands of run mode (`blobleader run --
//     COMMAND`): command lifetimes, S1-commands, the freeze rule,
//     S2-commands and L1-commands, with the named exceptions a scenario may
//     declare (commands.go).
//   - CheckShards judges a --shards pool: the election's rules per shard,
//     balance and stickiness (shards.go).
//
// Each returns its result with a Verdict: pass (no violation, complete
// evidence), fail (any violation) or inconclusive (no violation, but the
// history is known to be incomplete, or a timing bound was missed by no
// more than the machine stalled: never a pass). Compose merges the
// verdicts of several checkers on one run.
//
// # A busy machine
//
// Run.Sched is the harness's CPU probe over the run. Every timing bound
// that assumes the machine runs a process when it is due (L1, L1-commands,
// the freeze rule, the guard's kill window, shard L1 and balance, LL1, L2)
// is judged as its design bound plus the stall the probe measured in that
// bound's window; a miss within it goes to Verdict.Stalled (inconclusive),
// a larger one is a violation. Safety rules never read the probe
// (stall.go). A checker that saw no evidence
// has not passed: a worker without history, a scenario's unmet
// Requirements, a shard nobody owned are violations.
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
