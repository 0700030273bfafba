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
	if err := c.write(ctx, append(append([]PlanFault(nil), c.faults...), pf)); err != nil {
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
	return c.write(ctx, rest)
}

// Clear writes an empty plan and waits for the sidecar (also after a
// restart of the harness, when the plan in storage is not this one's).
func (c *Controller) Clear(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.write(ctx, nil)
}

// write stores the plan with a new version and waits for its acknowledgement;
// on success the plan becomes c.faults.
func (c *Controller) write(ctx context.Context, faults []PlanFault) error {
	ttl := c.TTL
	if ttl <= 0 {
		ttl = 15 * time.Minute
	}
	// Versions grow with the wall clock, so a new harness never reuses a
	// version an old sidecar state already acknowledges.
	v := max(c.version+1, time.Now().UnixNano())
	p := Plan{Version: v, Expires: time.Now().Add(ttl).UTC(), Faults: faults}
	if p.Faults == nil {
		p.Faults = []PlanFault{}
	}
	if err := c.Store.WritePlan(ctx, p); err != nil {
		return err
	}
	c.version = v
	if err := c.wait(ctx, v); err != nil {
		return err
	}
	c.faults = faults
	return nil
}

// wait polls the state until the sidecar reports version v.
func (c *Controller) wait(ctx context.Context, v int64) error {
	every := c.Poll
	if every <= 0 {
		every = time.Second
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	last := "no state yet"
	for {
		st, ok, err := c.Store.ReadState(ctx)
		switch {
		case err != nil:
			last = err.Error()
		case ok && st.Version == v && st.Error != "":
			return fmt.Errorf("sidecar %s: plan %d: %s", c.Store.Name, v, st.Error)
		case ok && st.Version == v:
			return nil
		case ok:
			last = fmt.Sprintf("state at %s has plan %d, error %q", st.At.Format(time.RFC3339Nano), st.Version, st.Error)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("sidecar %s did not apply plan %d (%s): %w", c.Store.Name, v, last, ctx.Err())
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
