// Package bench measures blobleader on a local Azurite and writes
// docs/benchmarks.md with its plots: crash failover, graceful
// handover, leaderless time under a fixed fault schedule, storage operations
// per worker-hour and their monthly cost, scale (3 to 300 contenders on one
// Azurite), footprint, and all of it side by side with the Azure Architecture
// Center sample's parameters (lease 15 s, renew every 10 s, acquire retry
// every 20 s).
//
// What runs where:
//
//   - Failover, handover, cost and the fault schedule run worker processes
//     through test/cluster (one private Azurite per cluster, a toxiproxy in
//     front of each worker) with the chaos package's faults; the checker
//     (test/checker) judges every run and its Failovers give the durations;
//     test/report draws each run's timeline.
//   - The sample's parameter set cannot run in our worker: its validation
//     requires renew interval ≤ D/3 and D < L − 2 s, and a 10 s renew on a
//     15 s lease breaks both. So the baseline is a separate bench-only binary,
//     cmd/sampleworker, which implements the sample's loop (acquire every
//     20 s, renew every 10 s, no renew deadline, release on stop) over the
//     same bloblock lock and storage client, speaks the worker's flags,
//     /status, /metrics and history contracts, and so runs in the very same
//     cluster, faults and checker.
//   - Scale runs N contenders in one process with the election library
//     (worker/election + bloblock), each with its own lock, lease ID and
//     HTTP connection pool: 300 worker processes would measure this 2-core
//     machine's scheduler, not the election. A "crash" there makes the
//     leader's lock refuse every further call (nothing reaches storage, no
//     release), then cancels it.
//   - Shards (shards.go) runs the real binary with --shards through
//     test/cluster: failover after a crash or graceful leave of a shard
//     owner that is not the leader, moves per join and leave against the
//     minimum (both from checker.CheckShards), storage operations per
//     worker-hour at N = 16, M = 3, and a scale step (256 shards over 10
//     workers on one Azurite, alone after the other cluster jobs).
//
// Timings are never asserted: every figure is printed and recorded with its
// spread (p50, p99, max, min, standard deviation).
package bench
