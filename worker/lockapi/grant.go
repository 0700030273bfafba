//go:build !negativecontrol

package lockapi

import (
	"context"
	"time"

	"github.com/blobleader/blobleader/worker/mutex"
)

// grant takes the lock for one lock request. Every shipped build grants
// exactly what storage grants (the lease); the negative-control build
// supplies another grant (negativecontrol.go).
func (s *Server) grant(ctx context.Context, ls mutex.Lease, d time.Duration) (mutex.Grant, error) {
	return s.l.Acquire(ctx, ls, d)
}
