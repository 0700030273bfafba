// Package history writes the worker's election events as JSON lines, the
// format the chaos checker reads (docs/architecture.md#worker-contracts):
//
//	{"t":"…","mono_ns":123,"identity":"w1","event":"started_leading","term":7,"reason":"…","valid_until":"…"}
//
// t is the wall clock in UTC, RFC3339Nano; mono_ns is the monotonic time
// since the process started, so events of one process order correctly even
// if its wall clock steps.
package history

import (
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/blobleader/blobleader/worker/election"
)

// Record is one line of history.
type Record struct {
	T        string `json:"t"`
	MonoNS   int64  `json:"mono_ns"`
	Identity string `json:"identity"`
	Event    string `json:"event"`
	Term     int64  `json:"term,omitempty"`
	Reason   string `json:"reason,omitempty"`
	// Leader: for observed_leader, who leads. (An addition to the contract.)
	Leader string `json:"leader,omitempty"`
	// ValidUntil: on started_leading, renewed and stopped_leading, the end of
	// the leadership as known then; absent for an unbounded (unsafe) claim.
	// (An addition to the contract.)
	ValidUntil string `json:"valid_until,omitempty"`
	// PID, ExitCode, Signal and Cause describe the supervised command of
	// `blobleader run` on child_started and child_exited (child.go).
	// (An addition to the contract.)
	PID      int    `json:"pid,omitempty"`
	ExitCode *int   `json:"exit_code,omitempty"`
	Signal   string `json:"signal,omitempty"`
	Cause    string `json:"cause,omitempty"`
	// Dropped: on history_dropped (written by the Blob sink), how many
	// records were lost before it. (An addition to the contract.)
	Dropped int64 `json:"dropped,omitempty"`
	// Shard: on the shard events of a --shards worker (shard_acquired,
	// shard_renewed, shard_released, shard_lease_released), the shard
	// number; Term is then the shard's own term. (An addition to the contract.)
	Shard *int `json:"shard,omitempty"`
	// Heartbeat: on renewed, the heartbeat written with the renew (early
	// takeover); on lease_broken, the heartbeat in the record the breaker
	// read unchanged for StaleMS milliseconds of its own clock before it
	// broke the lease. (An addition to the contract.)
	Heartbeat int64 `json:"heartbeat,omitempty"`
	StaleMS   int64 `json:"stale_ms,omitempty"`
}

// NewRecord turns an election event into a record. start is the process
// start time (with its monotonic reading).
func NewRecord(identity string, start time.Time, ev election.Event) Record {
	r := Record{
		T:        ev.Time.UTC().Format(time.RFC3339Nano),
		MonoNS:   int64(ev.Time.Sub(start)),
		Identity: identity,
		Event:    string(ev.Kind),
		Term:     ev.Term,
		Reason:   ev.Reason,
		Leader:   ev.Leader,

		Heartbeat: ev.Heartbeat,
		StaleMS:   ev.Stale.Milliseconds(),
	}
	if !ev.ValidUntil.IsZero() {
		r.ValidUntil = ev.ValidUntil.UTC().Format(time.RFC3339Nano)
	}
	return r
}

// File appends records to a JSONL file. Each record is one write(2) of one
// whole line with O_APPEND, so a SIGKILL never leaves half a line from an
// earlier record and nothing sits in a user-space buffer when the process
// dies or is paused.
type File struct {
	mu sync.Mutex
	f  *os.File
}

// OpenFile opens (creating if needed) path for appending.
func OpenFile(path string) (*File, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("history: %w", err)
	}
	return &File{f: f}, nil
}

// Write appends one record. Errors are returned, not fatal: history is
// evidence, and losing a line must not stop the election.
func (h *File) Write(r Record) error {
	b, err := r.line()
	if err != nil {
		return err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	_, err = h.f.Write(b)
	return err
}

// line is the record as history holds it: one JSON line.
func (r Record) line() ([]byte, error) {
	b, err := json.Marshal(r)
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// Close closes the file.
func (h *File) Close() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.f.Close()
}
