// Package report turns one checked chaos run into evidence a person can read:
// a JSON summary (faults by kind, violations, failover p50/p99/max by kind,
// leaderless time, counts) and a self-contained SVG timeline (one lane per
// worker, follower and leader intervals labelled with their terms, faults
// shaded with their kind, each failover annotated with its duration, an axis
// in seconds from the run start), also wrapped in a small HTML page with the
// violation and failover tables. No scripts, fonts or other external
// resources.
//
// Typical use after a scenario:
//
//	res, err := checker.Check(run, params)
//	...
//	files, err := report.Write(dir, "leader-crash-1", run, res)
//
// Output is deterministic: the same Run and Result give the same bytes, so
// reports can be compared and committed.
//
// Failover durations are measured from the moment each L1 bound counts from
// (Failover.From: the last renew of a crashed leader, the release after a
// graceful stop, the end of a network fault); FailoverRow.SinceFault gives
// the same failover measured from the fault's injection.
//
// Worker lanes show a process as alive from its first history event to its
// kill, to its last event before a restart (its mono_ns goes back), or to the
// run end; a quiet follower that logs nothing is drawn alive throughout.
package report
