package electiontest

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/blobleader/blobleader/worker/election/lease"
)

var _ lease.Breaker = (*Lock)(nil)

// breakOver reports whether a break with a period has run out by now; s.mu
// must be held.
func (s *Store) breakOver(now time.Time) bool {
	return !s.breakEnds.IsZero() && !now.Before(s.breakEnds)
}

// BreakFor breaks the lease with a break period, as Break Lease does: the
// lease stays held (not renewable) until the period has passed or the lease
// expires, whichever comes first; 0 frees it at once. A second break while
// one is under way takes the earlier end: the pessimistic reading of what
// storage may do, so that tests never rely on a second break leaving the
// first one's period alone.
func (s *Store) BreakFor(period time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.breakLocked(period)
}

// breakLocked is BreakFor with s.mu held.
func (s *Store) breakLocked(period time.Duration) {
	now := time.Now()
	if !s.held(now) {
		return
	}
	if period <= 0 {
		s.broken = true
		return
	}
	end := min(now.Add(period).UnixNano(), s.expires.UnixNano())
	if s.breakEnds.IsZero() || end < s.breakEnds.UnixNano() {
		s.breakEnds = time.Unix(0, end)
	}
}

// state is the lease state as Azure reports it; s.mu must be held.
func (s *Store) state(now time.Time) lease.State {
	switch {
	case s.leaseID == "":
		return lease.Available
	case s.broken || s.breakOver(now):
		return lease.Broken
	case !now.Before(s.expires):
		return lease.Expired
	case !s.breakEnds.IsZero():
		return lease.Breaking
	}
	return lease.Leased
}

// Inspect reads the lease state and the record ("inspect").
func (l *Lock) Inspect(ctx context.Context) (lease.View, error) {
	if err := l.begin(ctx, "inspect", ""); err != nil {
		return lease.View{}, err
	}
	s := l.s
	s.mu.Lock()
	defer s.mu.Unlock()
	return lease.View{State: s.state(time.Now()), Record: s.rec, Version: strconv.FormatInt(s.version, 10)}, unusableTerm(s.rec.Term)
}

// Break breaks the lease with period ("break") while the record is still
// at version, as a Break Lease with If-Match does; "" breaks whatever lease
// there is.
func (l *Lock) Break(ctx context.Context, version string, period time.Duration) error {
	if err := l.begin(ctx, "break", ""); err != nil {
		return err
	}
	s := l.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if now := strconv.FormatInt(s.version, 10); version != "" && version != now {
		return fmt.Errorf("electiontest %s: break refused: the record is at version %s, not %s (412)", l.name, now, version)
	}
	s.breakLocked(period)
	return nil
}
