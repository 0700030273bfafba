// Package scenarios is the chaos suite: each scenario of
// docs/chaos.md#scenarios is a named test that starts a cluster through the
// cluster.Cluster interface, injects its faults, heals them, and has the
// checker judge the merged history and the ledger for S1 (or the forced-break
// rule), S2, L1 and L2. Every run writes a JSON summary and a timeline
// (test/report).
//
// The scenario bodies (scenarios.go, soak.go) know nothing of the backend:
// they run against any Cluster. scenarios_test.go runs them on the local
// backend (Azurite and worker processes).
//
// Tiers, chosen by environment variables (the Makefile sets them):
//
//	go test ./test/scenarios            each scenario once (the short suite of `make test`)
//	BLOBLEADER_CHAOS_REPEAT=N           each scenario N times
//	BLOBLEADER_CHAOS_DURATION=10m       the seeded soak runs that long (otherwise 60 s; skipped with -short)
//	BLOBLEADER_CHAOS_SEED=42            the soak's seed (otherwise time-based, and logged)
//	BLOBLEADER_CHAOS_OUT=dir            reports (and copies of histories and logs) go there
//	                                    instead of the test's temp dir
//	BLOBLEADER_CHAOS_KEEP_FAILED=dir    a failed run's histories, logs and probe records
//	                                    go there when BLOBLEADER_CHAOS_OUT is unset
//	                                    (make test: out/failed)
//	BLOBLEADER_CHAOS_EPSILON=1s         the checker's failover slack ε (default 1 s)
package scenarios
