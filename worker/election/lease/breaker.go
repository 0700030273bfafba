package lease

import (
	"context"
	"time"
)

// MaxBreakPeriod is the longest break period storage accepts.
const MaxBreakPeriod = 60 * time.Second

// State is a lease's state as storage reports it.
type State string

const (
	Available State = "available"
	Leased    State = "leased"
	Expired   State = "expired"
	Breaking  State = "breaking"
	Broken    State = "broken"
)

// View is one read of the lock: the lease's state and the record.
type View struct {
	State  State
	Record Record
	// Version names the record as read (bloblock: the blob's ETag). Every
	// write of the record changes it; lease operations do not.
	Version string
}

// Breaker is what a Lock needs for early takeover
// (election.Config.TakeoverAfter; docs/failover.md#early-takeover).
type Breaker interface {
	// Inspect reads the lease state and the record in one request. No
	// object yet reads as Available, with the term floor as the term. A
	// record whose term cannot give the next one is returned with an error
	// wrapping ErrUnusableRecord, State and Version set.
	Inspect(ctx context.Context) (View, error)
	// Break ends the lease after period (whole seconds, at most
	// MaxBreakPeriod), but only while the lock is still at version
	// (View.Version of the read that judged the leadership): once the
	// record changed, storage refuses it and the lease stays. Nobody can
	// acquire before the period has passed at storage. Period 0 ends the
	// lease at once, and from then on storage refuses the holder's renews
	// and lease-guarded writes. The elector always breaks with period 0 and
	// names a version; the empty version breaks whatever lease there is —
	// an operator's forced break.
	Break(ctx context.Context, version string, period time.Duration) error
}
