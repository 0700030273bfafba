// Package sidecar is the chaos sidecar of the Azure suite: a small program in
// each worker's container group that puts the network faults of docs/chaos.md
// (latency, timeout, reset, partition) on that one worker's storage traffic,
// where the local suite puts them on an in-process proxy.
//
// How the traffic gets there. The sidecar runs a toxiproxy proxy
// (chaos.NewLoopbackProxy, toxiproxy v2 as a library) on a loopback address
// only, forwarding to the storage account's blob endpoint on port 443. The
// worker runs with --storage-dial <that address>: every storage connection is
// dialled to the proxy while TLS still runs end to end and verifies the real
// storage host name, so the sidecar sees ciphertext only. Containers of one
// ACI group share a network namespace, so nothing outside the group can reach
// the proxy, and the group has no IP address at all.
//
// How faults get there. The harness writes a fault Plan as JSON into a
// control blob, plans/<name>.json in the control container (default "chaos");
// the sidecar polls it (a conditional GET, so an unchanged plan costs one
// cheap request per poll), applies the difference to its proxy using the
// chaos package's own fault types — the same types and JSON parameters the
// local suite uses — and acknowledges by writing its State to
// state/<name>.json: the plan version it applied, the faults in place, any
// error, and the bytes the proxy carried each way (the harness's evidence that
// the worker keeps contending). A plan carries an expiry: if the harness dies,
// the faults go away on their own.
//
// The sidecar reaches storage for the control blobs directly, not through its
// own proxy, so a partitioned worker's sidecar still hears "heal". A storage
// outage (network rule Deny) silences it too; the harness heals that through
// ARM, not through the plan.
package sidecar
