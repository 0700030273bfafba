package cluster

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/blobleader/blobleader/chaos"
)

// Timeline is the ordered record of the faults a backend injected, kept by
// both the local and the Azure backend. Each entry pairs the fault as the
// scenario passed it with the fault that acts (the same one locally, its
// Azure translation on Azure). It is safe for concurrent use.
type Timeline struct {
	mu      sync.Mutex
	entries []*timelineEntry
}

type timelineEntry struct {
	asked, acting chaos.Fault
	rec           FaultRecord
}

// Add appends rec for asked, acted out by acting.
func (tl *Timeline) Add(asked, acting chaos.Fault, rec FaultRecord) {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	tl.entries = append(tl.entries, &timelineEntry{asked: asked, acting: acting, rec: rec})
}

// open is the newest entry of f (as asked or as acting) still in place; tl.mu must be held.
func (tl *Timeline) open(f chaos.Fault) *timelineEntry {
	for i := len(tl.entries) - 1; i >= 0; i-- {
		if e := tl.entries[i]; (e.asked == f || e.acting == f) && e.rec.End.IsZero() {
			return e
		}
	}
	return nil
}

// Open returns the fault that acts for f and its record, if f is in place.
func (tl *Timeline) Open(f chaos.Fault) (acting chaos.Fault, rec FaultRecord, ok bool) {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	if e := tl.open(f); e != nil {
		return e.acting, e.rec, true
	}
	return nil, FaultRecord{}, false
}

// Close stamps the end of f's record; it does nothing if f is not in place.
func (tl *Timeline) Close(f chaos.Fault) {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	if e := tl.open(f); e != nil {
		e.rec.End = time.Now()
	}
}

// InPlace lists the faults still in place, as the scenarios passed them,
// newest first: the order in which Heal removes them.
func (tl *Timeline) InPlace() []chaos.Fault {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	var out []chaos.Fault
	for i := len(tl.entries) - 1; i >= 0; i-- {
		if e := tl.entries[i]; e.rec.End.IsZero() {
			out = append(out, e.asked)
		}
	}
	return out
}

// Heal removes every fault still in place with remove, newest first, and
// reports every failure: the Heal of every Cluster.
func (tl *Timeline) Heal(ctx context.Context, remove func(context.Context, chaos.Fault) error) error {
	var errs []error
	for _, f := range tl.InPlace() {
		errs = append(errs, remove(ctx, f))
	}
	return errors.Join(errs...)
}

// Records returns a copy of the timeline, in injection order.
func (tl *Timeline) Records() []FaultRecord {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	out := make([]FaultRecord, len(tl.entries))
	for i, e := range tl.entries {
		out[i] = e.rec
	}
	return out
}
