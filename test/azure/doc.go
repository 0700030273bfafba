//go:build azure

// Package azure runs the chaos scenarios of test/scenarios against a real
// Azure deployment of infra/ (docs/testing-on-azure.md).
//
// It is the Azure backend of test/cluster's Cluster interface: every worker is
// an Azure Container Instances container group whose name is the worker's
// identity; faults act through ARM (crash: stop the group, graceful: restart
// it, storage outage: network rule Deny) or through the chaos sidecar in each
// group (latency, timeouts, resets, partition: chaos/sidecar); the workers'
// history comes back from the `history` container and the ledger from the
// `leases` container, and the same checker judges them with a clock-skew
// tolerance.
//
// The suite (suite_test.go) is a terratest suite in stages — deploy, verify,
// chaos, shards (the shard scenarios on the groups applied again with
// `shards`), teardown — each skippable with SKIP_<stage> while iterating. Every
// file carries the `azure` build tag; `go test -tags azure -run Offline`
// runs the parts that need no subscription.
package azure
