package sidecar

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/blobleader/blobleader/chaos"
)

// Plan is the set of faults that should be on one worker's link. The harness
// writes the whole plan on every change, with a higher Version.
type Plan struct {
	Version int64       `json:"version"`          // increases with every write; the sidecar echoes the version it applied
	Expires time.Time   `json:"expires,omitzero"` // after this the sidecar removes every fault (the harness died); zero = never
	Faults  []PlanFault `json:"faults"`           // the faults in place; empty heals the link
	// Stop, when set, asks the sidecar to stop its worker gracefully, once
	// per request id (stop.go): the graceful-stop fault on Azure.
	Stop *StopRequest `json:"stop,omitempty"`
	Note string       `json:"note,omitempty"` // free text for humans (which scenario wrote it)
}

// StopRequest asks for one graceful stop of the worker. The sidecar acts on
// each ID once, and not at all after Before: a sidecar that restarts and
// reads an old plan must not stop its worker again.
type StopRequest struct {
	ID     string    `json:"id"`
	Before time.Time `json:"before"`
}

// StopResult is what the sidecar did with the last stop request.
type StopResult struct {
	ID    string    `json:"id"`
	At    time.Time `json:"at"`              // when the worker accepted (or refused), on the group's clock
	Error string    `json:"error,omitempty"` // why the worker could not be asked; empty: it accepted and SIGTERMed itself
}

// PlanFault is one network fault: its kind and the chaos type's own JSON
// parameters (chaos.Latency, chaos.Timeout, chaos.Reset, chaos.Partition).
type PlanFault struct {
	ID     string          `json:"id"`               // unique within the plan; the harness keeps it while the fault is in place
	Kind   chaos.Kind      `json:"kind"`             // latency, timeout, reset or partition
	Params json.RawMessage `json:"params,omitempty"` // e.g. {"latency":300,"stream":"both"}
}

// ErrPlan is wrapped by every plan the sidecar cannot apply.
var ErrPlan = errors.New("sidecar: invalid plan")

// SidecarKinds are the fault kinds a sidecar can apply.
var SidecarKinds = []chaos.Kind{chaos.KindLatency, chaos.KindTimeout, chaos.KindReset, chaos.KindPartition}

// NewPlanFault describes f (a *chaos.Latency, *chaos.Timeout, *chaos.Reset or
// *chaos.Partition) for a plan, with its JSON parameters.
func NewPlanFault(id string, f chaos.Fault) (PlanFault, error) {
	switch f.(type) {
	case *chaos.Latency, *chaos.Timeout, *chaos.Reset, *chaos.Partition:
	default:
		return PlanFault{}, fmt.Errorf("%w: %T (%s) is not a network fault the sidecar can apply", ErrPlan, f, f.Kind())
	}
	b, err := json.Marshal(f)
	if err != nil {
		return PlanFault{}, err
	}
	return PlanFault{ID: id, Kind: f.Kind(), Params: b}, nil
}

// Build makes the chaos fault pf describes, bound to proxy p.
func (pf PlanFault) Build(p *chaos.Proxy) (chaos.Fault, error) {
	if pf.ID == "" {
		return nil, fmt.Errorf("%w: a fault without an id", ErrPlan)
	}
	var f chaos.Fault
	switch pf.Kind {
	case chaos.KindLatency:
		f = &chaos.Latency{Proxy: p}
	case chaos.KindTimeout:
		f = &chaos.Timeout{Proxy: p}
	case chaos.KindReset:
		f = &chaos.Reset{Proxy: p}
	case chaos.KindPartition:
		f = &chaos.Partition{Proxy: p}
	default:
		return nil, fmt.Errorf("%w: fault %s has kind %q; a sidecar applies only %v", ErrPlan, pf.ID, pf.Kind, SidecarKinds)
	}
	if len(pf.Params) > 0 {
		if err := json.Unmarshal(pf.Params, f); err != nil {
			return nil, fmt.Errorf("%w: fault %s (%s): %v", ErrPlan, pf.ID, pf.Kind, err)
		}
	}
	return f, nil
}

// same reports whether two plan faults are the same fault with the same
// parameters (so a fault staying in the plan is left alone).
func (pf PlanFault) same(o PlanFault) bool {
	return pf.ID == o.ID && pf.Kind == o.Kind && string(pf.Params) == string(o.Params)
}

// State is what the sidecar reports after every plan it applied and every
// poll: the harness waits for Version and reads Upstream for liveness.
type State struct {
	Name       string   `json:"name"`
	Version    int64    `json:"version"`           // the plan version applied (0: none yet)
	Faults     []string `json:"faults"`            // ids of the faults in place
	Error      string   `json:"error,omitempty"`   // why the last plan was not (fully) applied
	Expired    bool     `json:"expired,omitempty"` // the plan expired and was dropped
	Upstream   int64    `json:"upstream"`          // bytes towards storage since start
	Downstream int64    `json:"downstream"`        // bytes back from storage since start
	// Worker is the worker's own GET /status answer, fetched by the sidecar
	// inside the group at WorkerAt (the group has no IP, so this is how the
	// harness hears a worker's role cheaply); WorkerError says why it is
	// missing.
	Worker      json.RawMessage `json:"worker,omitempty"`
	WorkerAt    time.Time       `json:"worker_at,omitzero"`
	WorkerError string          `json:"worker_error,omitempty"`
	Stop        *StopResult     `json:"stop,omitempty"` // the last stop request acted on
	Started     time.Time       `json:"started"`        // sidecar start
	At          time.Time       `json:"at"`             // when this state was written
}
