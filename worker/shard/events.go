package shard

import "time"

// EventKind names a shard event; the values are the history contract's
// (docs/architecture.md, "History").
type EventKind string

const (
	// EventShardAcquired: this worker holds shard Shard's lease under Term
	// and its task starts. ValidUntil as for started_leading.
	EventShardAcquired EventKind = "shard_acquired"
	// EventShardRenewed: a successful renew of the shard lease; ValidUntil
	// is the new end of ownership.
	EventShardRenewed EventKind = "shard_renewed"
	// EventShardReleased: ownership of Shard under Term ended (the task has
	// returned); Reason says why ("moved", "shutdown", "renew deadline
	// exceeded", "lease lost: …", "task exited: …").
	EventShardReleased EventKind = "shard_released"
	// EventShardLeaseReleased: the shard's lease is free at storage (a
	// graceful release after EventShardReleased); the next owner takes it
	// within P·1.1.
	EventShardLeaseReleased EventKind = "shard_lease_released"
	// EventMemberJoined / EventMemberLeft: this worker's member lease was
	// acquired / ended.
	EventMemberJoined EventKind = "member_joined"
	EventMemberLeft   EventKind = "member_left"
	// EventAssignmentPublished: the leader published Assignment under its
	// election term (Term).
	EventAssignmentPublished EventKind = "assignment_published"
)

// Event is one thing that happened, for history and logs.
type Event struct {
	Kind       EventKind
	Time       time.Time
	Shard      int   // the shard; -1 for member and assignment events
	Term       int64 // the shard's term; the leader's term for assignment_published; 0 for member events
	Reason     string
	ValidUntil time.Time   // shard_acquired, shard_renewed, shard_released: end of ownership as known then
	Assignment *Assignment // assignment_published
}

func (w *Worker) emit(ev Event) {
	if ev.Time.IsZero() {
		ev.Time = time.Now()
	}
	if w.cfg.OnEvent != nil {
		w.cfg.OnEvent(ev)
	}
}
