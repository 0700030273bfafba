package sidecar

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/blobleader/blobleader/chaos"
)

// Controller is the harness's side of one worker's sidecar: it keeps the
// plan, writes it on every change and waits until the sidecar acknowledges.
type Controller struct {
	Store *Store
	TTL   time.Duration // plan expiry after each write; default 15 min
	Poll  time.Duration // how often to read the state while waiting; default 1 s

	mu      sync.Mutex
	version int64
	faults  []PlanFault
	seq     int
}

// Apply adds f to the plan and returns once the sidecar has it in place.
// The id it returns removes it again.
func (c *Controller) Apply(ctx context.Context, f chaos.Fault) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seq++
	pf, err := NewPlanFault(fmt.Sprintf("%s-%d", f.Kind(), c.seq), f)
	if err != nil {
		return "", err
	}
	if _, err := c.write(ctx, append(append([]PlanFault(nil), c.faults...), pf), nil); err != nil {
		return "", err
	}
	return pf.ID, nil
}

// Remove takes fault id out of the plan and waits for the sidecar. Removing
// an id that is not in the plan is a no-op.
func (c *Controller) Remove(ctx context.Context, id string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var rest []PlanFault
	found := false
	for _, pf := range c.faults {
		if pf.ID == id {
			found = true
			continue
		}
		rest = append(rest, pf)
	}
	if !found {
		return nil
	}
	_, err := c.write(ctx, rest, nil)
	return err
}

// Clear writes an empty plan and waits for the sidecar (also after a
// restart of the harness, when the plan in storage is not this one's).
func (c *Controller) Clear(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, err := c.write(ctx, nil, nil)
	return err
}

// StopTTL is how long a stop request stays valid in the plan.
const StopTTL = time.Minute

// StopWorker asks the sidecar to stop its worker gracefully (the worker
// SIGTERMs itself) and returns once the sidecar reports the worker's
// answer: the result's At is when the worker accepted, on the group's clock.
// The faults in place stay.
func (c *Controller) StopWorker(ctx context.Context) (StopResult, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seq++
	req := &StopRequest{ID: fmt.Sprintf("stop-%d-%d", c.seq, time.Now().UnixNano()), Before: time.Now().Add(StopTTL).UTC()}
	st, err := c.write(ctx, c.faults, req)
	if err != nil {
		return StopResult{}, err
	}
	switch {
	case st.Stop == nil || st.Stop.ID != req.ID:
		return StopResult{}, fmt.Errorf("sidecar %s applied plan %d without acting on stop %s", c.Store.Name, st.Version, req.ID)
	case st.Stop.Error != "":
		return *st.Stop, fmt.Errorf("sidecar %s could not stop its worker: %s", c.Store.Name, st.Stop.Error)
	}
	return *st.Stop, nil
}

// write stores the plan (with stop, when set) under a new version and waits
// for its acknowledgement; on success the plan becomes c.faults and the
// acknowledging state is returned.
func (c *Controller) write(ctx context.Context, faults []PlanFault, stop *StopRequest) (State, error) {
	ttl := c.TTL
	if ttl <= 0 {
		ttl = 15 * time.Minute
	}
	// Versions grow with the wall clock, so a new harness never reuses a
	// version an old sidecar state already acknowledges.
	v := max(c.version+1, time.Now().UnixNano())
	p := Plan{Version: v, Expires: time.Now().Add(ttl).UTC(), Faults: faults, Stop: stop}
	if p.Faults == nil {
		p.Faults = []PlanFault{}
	}
	if err := c.Store.WritePlan(ctx, p); err != nil {
		return State{}, err
	}
	c.version = v
	st, err := c.wait(ctx, v)
	if err != nil {
		return st, err
	}
	c.faults = faults
	return st, nil
}

// pollTicker ticks every Poll (default 1 s): how often a wait reads the
// sidecar's state.
func (c *Controller) pollTicker() *time.Ticker {
	if c.Poll <= 0 {
		return time.NewTicker(time.Second)
	}
	return time.NewTicker(c.Poll)
}

// wait polls the state until the sidecar reports version v.
func (c *Controller) wait(ctx context.Context, v int64) (State, error) {
	tick := c.pollTicker()
	defer tick.Stop()
	last := "no state yet"
	for {
		st, ok, err := c.Store.ReadState(ctx)
		switch {
		case err != nil:
			last = err.Error()
		case ok && st.Version == v && st.Error != "":
			return st, fmt.Errorf("sidecar %s: plan %d: %s", c.Store.Name, v, st.Error)
		case ok && st.Version == v:
			return st, nil
		case ok:
			last = fmt.Sprintf("state at %s has plan %d, error %q", st.At.Format(time.RFC3339Nano), st.Version, st.Error)
		}
		select {
		case <-ctx.Done():
			return State{}, fmt.Errorf("sidecar %s did not apply plan %d (%s): %w", c.Store.Name, v, last, ctx.Err())
		case <-tick.C:
		}
	}
}

// Remote is a network fault applied through a worker's sidecar: it has the
// wrapped fault's kind and parameters, and the worker as its target.
type Remote struct {
	Fault      chaos.Fault // *chaos.Latency, *chaos.Timeout, *chaos.Reset or *chaos.Partition (parameters only)
	Controller *Controller
	Worker     string // the target's identity (its container group name)

	mu sync.Mutex
	id string
}

var _ chaos.Fault = (*Remote)(nil)

func (r *Remote) Kind() chaos.Kind { return r.Fault.Kind() }
func (r *Remote) Target() string   { return r.Worker }

// Inject writes the fault into the worker's plan and returns once the
// sidecar has it in place.
func (r *Remote) Inject(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.id != "" {
		return fmt.Errorf("%w: %s on %s", chaos.ErrInjected, r.Kind(), r.Worker)
	}
	id, err := r.Controller.Apply(ctx, r.Fault)
	if err != nil {
		return err
	}
	r.id = id
	return nil
}

// Remove takes it out of the plan and returns once the sidecar removed it.
func (r *Remote) Remove(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.id == "" {
		return nil
	}
	if err := r.Controller.Remove(ctx, r.id); err != nil {
		return err
	}
	r.id = ""
	return nil
}
