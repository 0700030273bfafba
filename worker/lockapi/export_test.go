package lockapi

import "time"

// SetClock replaces the clock the lock handler judges a grant's lateness
// by: the tests stand a replica frozen between its grant and its answer.
func SetClock(s *Server, now func() time.Time) { s.now = now }
