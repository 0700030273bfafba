//go:build negativecontrol

package lockapi

import (
	"context"
	"errors"
	"time"

	"github.com/blobleader/blobleader/worker/mutex"
)

// grant, in the negative-control build only (go build -tags
// negativecontrol), grants a lock another lease holds — without the lease,
// at the stored term + 1 — so the lock scenarios can show that their
// checker catches two holders at once. No shipped build has it.
func (s *Server) grant(ctx context.Context, ls mutex.Lease, d time.Duration) (mutex.Grant, error) {
	sent := time.Now()
	g, err := s.l.Acquire(ctx, ls, d)
	if !errors.Is(err, mutex.ErrLocked) {
		return g, err
	}
	st, rerr := s.l.Read(ctx, ls.Resource)
	if rerr != nil {
		return g, err
	}
	return mutex.Grant{Term: st.Term + 1, Sent: sent}, nil
}
