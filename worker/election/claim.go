//go:build !negativecontrol

package election

import (
	"errors"
	"time"

	"github.com/blobleader/blobleader/worker/election/lease"
)

// claimRule decides how long a leadership may be claimed, what ends it, and
// when a follower may break a holder's lease early. This is the rule of
// every shipped build: a leadership is claimed until its renew deadline, is
// published with that bound, and ends at the first definite loss; a
// holder's lease is broken only once its record has been unchanged for as
// long as safety needs. Config carries it unexported, so no library user and no
// flag can change it (docs/architecture.md#the-election).
type claimRule struct{}

// until is how long a leadership whose renew deadline is deadline may be
// claimed: exactly until the deadline.
func (claimRule) until(deadline time.Time) time.Time { return deadline }

// reported is the ValidUntil events and Status publish for a claim lasting
// until t.
func (claimRule) reported(t time.Time) time.Time { return t }

// ends reports whether a renew's error ends the leadership: a definite loss
// (the lease broken, taken or deleted) does; anything else is retried.
func (claimRule) ends(err error) bool { return errors.Is(err, lease.ErrLost) }

// breakAfter is how long a holder's record (r) must stay unchanged before a
// follower breaks its lease: safe, what its published contract asks.
func (claimRule) breakAfter(safe time.Duration, _ lease.Record) time.Duration { return safe }
