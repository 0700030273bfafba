// Package shard is the Leader-Followers pattern on top of package election:
// N work shards, each owned by exactly one live worker at a time, balanced by
// the elected leader and moved with no overlap and a bounded delay when
// workers die or join.
//
// # How it works
//
// Membership. Every Worker holds a lease on its own member blob (an Elector
// on a bloblock.Lock for <blob>-shards/members/<identity>), renewed like the
// election lease. Storage itself expires it when the worker dies or is cut
// off. The leader sees every member's lease state, every shard lease and
// its holder, and the published documents in one List Blobs call with
// metadata (see Layout).
//
// Assignment. While a worker leads the election, Lead is its leader task.
// Every P it lists the pool and plans: facts first (a shard whose lease a
// member holds stays with it), then balance (every member ⌊N/M⌋ or ⌈N/M⌉),
// moving only what balance requires. Each shard held by its owner also gets
// a standby: the member that would receive it if the owner left. It keeps
// that standby while the owner stays in the plan, even once the owner's
// lease has lapsed, so the standby takes it as soon as storage expires it. The plan
// is published to <blob>-shards/assignment under the leader's fencing term,
// conditioned on the ETag the leader last read or wrote; a deposed leader's
// write fails with 412 and, reading again, it finds the newer term and
// steps down (ErrDeposed). A new leader adopts the published plan: with the
// same facts it computes the same plan, so a leader change alone moves
// nothing. Workers ignore an assignment from a term below the highest they
// have seen.
//
// Ownership. A worker runs one election.Elector per shard it owns or stands
// by for, on a bloblock.Lock for the shard's blob; the shard's task runs as
// that elector's leader task, with the shard's own fencing term. So safety
// per shard is the election's, resting on storage and not on the
// assignment: a worker works a shard only while it holds the shard's lease,
// under the same renew deadline, and stops the task the moment it lapses.
// The standby polls the shard's lease every P, so when an owner dies its
// shards are taken over within L + P·1.1 of its last renew, and when an
// owner releases them (a graceful stop) within P·1.1, without waiting for
// the leader.
//
// Moves. When the assignment moves a shard away from its holder, the holder
// keeps working it for Config.Drain (so every worker that could still act
// on the older assignment has read the new one or stopped acquiring), then
// stops its task and releases; the new owner is already polling and
// acquires within P·1.1 of the release. A gate in front of every shard
// acquisition allows it only with an assignment read within ViewTTL, and
// only to the shard's owner, or to its standby. A standby whose view went
// stale (an outage, a partition) and is fresh again warms up for
// standbyWarmup before it takes an expired lease, so after an outage the
// owners, not the standbys, win their shards back; a lease that was released
// or broken has no owner coming back for it, and the standby takes it at
// once (it reads the lease state, one request per poll, only while warming
// up).
//
// Aggregation. Shard tasks call ReportProgress; each member writes its
// progress report every ReportEvery; the leader reads the reports of the
// members it counts and publishes a Summary (per shard: owner, the owner's
// shard term, the last reported ledger sequence) every SummaryEvery, fenced
// like the assignment.
//
// # Guarantees
//
//   - Per shard, everything package election guarantees: at most one worker
//     believes it owns a shard at any instant (given the clock-rate
//     assumption), shard terms strictly increase, a crashed owner's shard is
//     owned again within L + P·1.1 (plus request time) of its last renew when
//     it had a standby, a released shard within P·1.1 of the release.
//   - Within settleBound of the last membership change, with no fault in
//     place, every member owns ⌊N/M⌋ or ⌈N/M⌉ shards.
//   - A join moves only the shards the joiner must receive, a leave only the
//     leaver's shards; a leader change alone moves none.
//   - Storage refuses a deposed leader's assignment and summary writes once
//     the new leader has written.
//
// # Non-guarantees
//
//   - The assignment is advice, not authority: a worker may briefly hold a
//     shard the latest assignment gives to another (it drains it), and a
//     shard may be briefly free during a move. Only the shard lease says who
//     owns a shard; fence side effects with the shard term.
//   - A shard whose owner dies while it has no standby (a single member, or
//     a shard still being moved) waits for the leader: L + memberGrace plus
//     a few polls, not the failover bound.
//   - A member that loses a shard to its standby without dying receives no
//     new shards for suspectFor; then the join rules bring it back to its
//     share (moves that balance then requires).
//   - Progress in the summary lags the ledgers by up to ReportEvery +
//     SummaryEvery.
//   - All workers of a pool must run with the same N.
package shard
