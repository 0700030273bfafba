package election

import (
	"context"

	"github.com/blobleader/blobleader/worker/election/lease"
)

// RunTaskWhenLeader is the one-call form for services that only need "exactly
// one instance runs task": it contends with cfg on lock until ctx ends and runs
// task whenever this process leads, with the fencing term and a context that
// is cancelled the moment leadership ends. The task should pass the term to
// every side effect and call Progress(ctx) each time work lands (not each
// time a loop turns) when cfg.WatchdogTimeout is set. If the task returns, leadership is handed on.
func RunTaskWhenLeader(ctx context.Context, cfg Config, lock lease.Lock, task func(ctx context.Context, term int64) error) error {
	e, err := NewElector(cfg, lock, Callbacks{OnStartedLeading: task})
	if err != nil {
		return err
	}
	return e.Run(ctx)
}
