package election

import "time"

// EventKind names an election event; the values are the history contract's.
type EventKind string

const (
	EventStartedLeading EventKind = "started_leading"
	EventRenewed        EventKind = "renewed"
	EventStoppedLeading EventKind = "stopped_leading"
	EventObservedLeader EventKind = "observed_leader"
	EventRenewFailed    EventKind = "renew_failed"
	EventAcquireFailed  EventKind = "acquire_failed"
	EventReleased       EventKind = "released"
)

// Event is one thing that happened, for history and metrics.
type Event struct {
	Kind   EventKind
	Time   time.Time // when it happened (carries the monotonic reading)
	Term   int64
	Reason string
	Leader string // observed_leader: who leads
	// ValidUntil is the end of our leadership as known at this event
	// (started_leading, renewed, stopped_leading); zero when the claim has
	// no bound or for other events.
	ValidUntil time.Time
	// Heartbeat: on renewed, the heartbeat written with it (0: none); on
	// lease_broken, the heartbeat in the record the breaker found unchanged.
	// Stale is how long the breaker saw that record unchanged (its own
	// clock; takeover.go).
	Heartbeat int64
	Stale     time.Duration
}

func (e *Elector) emit(ev Event) {
	if ev.Time.IsZero() {
		ev.Time = time.Now()
	}
	if e.cb.OnEvent != nil {
		e.cb.OnEvent(ev)
	}
}
