package sidecar

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/blobleader/blobleader/chaos"
)

// RemoteStop is the graceful stop of one worker on Azure: Inject asks the
// worker's sidecar to deliver a stop request to the worker's control
// endpoint, and the worker sends itself SIGTERM (it steps down, releases the
// lease, logs `released` and exits 0). It returns once the worker accepted.
// The container's restart policy starts the worker again; with Restart set,
// Remove waits until the new process answers its status through the sidecar.
type RemoteStop struct {
	Restart    bool        `json:"restart"` // Remove waits for the restarted worker
	Controller *Controller `json:"-"`
	Worker     string      `json:"-"` // the target's identity (its container group name)

	mu        sync.Mutex
	stoppedAt time.Time // when the worker accepted, on the group's clock; zero while not stopped
}

var _ chaos.Fault = (*RemoteStop)(nil)

func (r *RemoteStop) Kind() chaos.Kind { return chaos.KindGraceful }
func (r *RemoteStop) Target() string   { return r.Worker }

// Inject asks the worker to stop and returns once it accepted.
func (r *RemoteStop) Inject(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.stoppedAt.IsZero() {
		return fmt.Errorf("%w: graceful stop of %s", chaos.ErrInjected, r.Worker)
	}
	res, err := r.Controller.StopWorker(ctx)
	if err != nil {
		return err
	}
	r.stoppedAt = res.At
	return nil
}

// Remove waits (with Restart) until the worker runs again: the sidecar
// relays a status from a process whose role began after the stop.
func (r *RemoteStop) Remove(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stoppedAt.IsZero() {
		return nil
	}
	if r.Restart {
		if err := r.waitBack(ctx); err != nil {
			return err
		}
	}
	r.stoppedAt = time.Time{}
	return nil
}

func (r *RemoteStop) waitBack(ctx context.Context) error {
	tick := r.Controller.pollTicker()
	defer tick.Stop()
	last := "no state yet"
	for {
		st, ok, err := r.Controller.Store.ReadState(ctx)
		switch {
		case err != nil:
			last = err.Error()
		case !ok:
		case st.WorkerError != "":
			last = "worker: " + st.WorkerError
		case len(st.Worker) > 0:
			var ws struct {
				Role  string    `json:"role"`
				Since time.Time `json:"since"`
			}
			if json.Unmarshal(st.Worker, &ws) == nil && ws.Since.After(r.stoppedAt) && (ws.Role == "leader" || ws.Role == "follower") {
				return nil
			}
			last = fmt.Sprintf("relayed status %s at %s", st.Worker, st.WorkerAt.Format(time.RFC3339Nano))
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("sidecar: %s did not come back after its graceful stop at %s (the container's restart policy starts it again; last: %s): %w",
				r.Worker, r.stoppedAt.Format(time.RFC3339Nano), last, ctx.Err())
		case <-tick.C:
		}
	}
}
