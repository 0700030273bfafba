// Package chaos injects the faults of docs/chaos.md#pieces into a running
// blobleader cluster: one small type per fault behind one interface, modelled
// on Shopify/toxiproxy's toxics.
//
// Every fault can be injected once and removed cleanly, and every call honours
// its context. A fault holds the handle it acts on (a Process for the process
// faults, one or more Proxy values for the network faults, a blob client for
// the operator's BreakLease), so the same scenario can drive a local cluster or
// a remote one: only the handles differ.
//
// Process faults:
//
//   - Crash — SIGKILL; Remove starts the worker again (when Restart is set).
//   - Stop — graceful stop with SIGTERM; Remove starts the worker again.
//   - Pause — SIGSTOP; Remove sends SIGCONT.
//   - BlockedOutput — the process's stdout/stderr a full pipe nobody reads
//     (an OutputPipe the harness drains); Remove drains it again.
//
// Network faults act on the toxiproxy proxy between one worker and storage
// (toxiproxy v2 used as a library, see Proxy). A toxic on the downstream
// stream alone still lets the request reach storage, so each fault says which
// streams it poisons:
//
//   - Latency — delay, both streams by default.
//   - Timeout — a black hole that swallows data (downstream by default: the
//     request reaches storage, the answer never comes back), optionally closing
//     the connection after a while.
//   - Reset — the connection is reset on the first data (with a probability).
//   - Partition — one worker cut off from storage in both directions.
//   - Outage — every worker cut off from storage.
//
// toxiproxy decides per connection whether a toxic with Toxicity < 1 bites,
// and a client keeps the connections that survived; Latency, Timeout and
// Reset are Rerollable, so a long-held fault can keep biting.
//
// Operator fault:
//
//   - BreakLease — BreakLease(0) on the lock blob from a client of its own.
//   - OperatorMetadata — break the lease and write the lock's metadata by
//     hand (a typo'd term, a term that cannot grow, no holder).
//   - Rollback — storage goes back in time: the lock's metadata and the
//     ledger restored to an earlier Snapshot.
//
// Shard pool and ledger state, from outside the cluster with a client of its
// own:
//
//   - DeleteDocument — a pool document (assignment, summary, report) deleted.
//   - RollbackDocument — a pool document put back to an earlier Snapshot.
//   - CorruptDocument — a pool document overwritten with what is not one
//     (cut in half by default).
//   - LedgerBlobType — a ledger's last segment re-uploaded as a block blob.
//
// Request fault by blob: SlowReads — one worker's reads of some blobs (a
// --shards leader's member reports) held below the request timeout.
//
// What this package does not do: decide when to inject (the scenarios do),
// record the timeline (the cluster does), or judge the outcome (the checker).
package chaos
