// Package setupconflict holds what the election and the shard pool share
// about conflicting set-ups (docs/architecture.md#conflicting-set-ups): the
// log line both write, and how long a conflict must last before either
// reports it.
package setupconflict

import "time"

// LogEvent is the `event` of the conflict log line
// (docs/architecture.md#log-lines-the-alerts-read).
const LogEvent = "setup_conflict"

// After is how long every read must show a conflicting set-up before it is
// reported: the lease duration (a departed contender's lease expires), two
// follower polls (retry period + 10 % jitter) and two request timeouts (a
// new holder's stamp). Anything shorter could report the last stamp of a
// contender that is already gone.
func After(leaseDuration, retryPeriod, requestTimeout time.Duration) time.Duration {
	return leaseDuration + 2*(retryPeriod+retryPeriod/10) + 2*requestTimeout
}
