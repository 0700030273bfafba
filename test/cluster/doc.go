// Package cluster runs a blobleader cluster for the chaos scenarios behind
// one interface, in the shape of hashicorp/raft's MakeCluster helpers: start
// N workers, find the leader (failing unless there is exactly one), inject and
// heal faults, and hand the checker everything it needs (histories, faults,
// liveness).
//
// The local backend (NewLocal) builds the worker binary once per test binary,
// starts a private Azurite on a free loopback port and N worker processes,
// each behind its own in-process toxiproxy (chaos.Proxy) and with its own
// --listen port, --identity and --history file in the test's temp dir. It
// cleans up every process (continuing stopped ones before killing them),
// proxy and file with t.Cleanup, also when the test fails. Each local
// cluster also probes its Azurite directly (StorageProbe), so a stall of
// storage itself is in the run's evidence, and the machine's promptness
// (SchedProbe, a stalltest.Probe), so the checker can add the machine's
// stall to its timing bounds (docs/chaos.md#a-busy-machine).
//
// Incarnations: a restarted worker (after a crash or a graceful stop) is a new
// process with a new identity, "w1" then "w1.2", "w1.3" — as in production,
// where the default identity carries the pid. Its slot ("w1") stays the same.
//
// Scenarios must not depend on the backend: they describe faults with the
// chaos types' JSON parameters and let Inject bind them to the backend's
// handles (a process, a proxy, the lock blob).
package cluster
