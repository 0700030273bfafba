package checker

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"
)

// History event names (docs/architecture.md#worker-contracts, with `renewed`).
// Events with other names are kept in the history and ignored by the checks.
const (
	EventStartedLeading = "started_leading"
	EventRenewed        = "renewed"
	EventStoppedLeading = "stopped_leading"
	EventObservedLeader = "observed_leader"
	EventRenewFailed    = "renew_failed"
	EventAcquireFailed  = "acquire_failed"
	EventReleased       = "released"
	// EventHistoryDropped is written by the blob history sink ahead of the
	// records that follow a loss: Dropped records of this worker are gone,
	// so the run cannot be judged (Result.Inconclusive).
	EventHistoryDropped = "history_dropped"
)

// ErrMalformed is wrapped by ReadHistory and ParseHistory for a line that is
// not a history event; the message names the file and line.
var ErrMalformed = errors.New("checker: malformed history line")

// Event is one line of a worker's JSONL history. Unknown JSON fields are
// ignored.
type Event struct {
	T          time.Time `json:"t"`                    // wall clock of the worker, UTC
	MonoNS     int64     `json:"mono_ns"`              // nanoseconds since the worker process started (monotonic)
	Identity   string    `json:"identity"`             // worker identity
	Event      string    `json:"event"`                // one of the Event* names, or anything else (ignored)
	Term       int64     `json:"term,omitzero"`        // fencing term, 0 when absent
	Reason     string    `json:"reason,omitzero"`      // why (stopped_leading, *_failed)
	Leader     string    `json:"leader,omitzero"`      // observed leader (observed_leader)
	ValidUntil time.Time `json:"valid_until,omitzero"` // end of the belief in force, zero when absent
	Shard      *int      `json:"shard,omitempty"`      // the shard of a shard event (--shards; see shards.go), nil otherwise
	Dropped    int64     `json:"dropped,omitzero"`     // history_dropped: how many records were lost before it
	// Early takeover (takeover.go): on renewed, the heartbeat written with
	// it; on lease_broken, the heartbeat in the record read unchanged for
	// StaleMS.
	Heartbeat int64  `json:"heartbeat,omitzero"`
	StaleMS   int64  `json:"stale_ms,omitzero"`
	Source    string `json:"-"` // "file:line" it was read from, empty for synthetic events
	Raw       string `json:"-"` // the line as read, empty for synthetic events
}

// String quotes the event for a violation message: its source and the line as
// read, or a JSON rendering for synthetic events.
func (e Event) String() string {
	raw := e.Raw
	if raw == "" {
		b, err := json.Marshal(e)
		if err != nil {
			raw = fmt.Sprintf("%+v", struct {
				T                       time.Time
				Identity, Event, Reason string
				Term                    int64
			}{e.T, e.Identity, e.Event, e.Reason, e.Term})
		} else {
			raw = string(b)
		}
	}
	if e.Source == "" {
		return raw
	}
	return e.Source + ": " + raw
}

// ReadWrittenHistory is ReadHistory over those of paths that exist: a worker
// that has not written yet has no history file, which is no error here (the
// checker itself fails a started worker that left none).
func ReadWrittenHistory(paths ...string) ([]Event, error) {
	var written []string
	for _, p := range paths {
		if _, err := os.Stat(p); err == nil {
			written = append(written, p)
		}
	}
	return ReadHistory(written...)
}

// ReadHistory reads the JSONL history files of a run and merges them into one
// slice sorted by wall time (ties keep file order, then line order).
//
// Blank lines are skipped. A line that is not a JSON object, or lacks `t`,
// `identity` or `event`, is an error naming file:line (wrapping ErrMalformed),
// except a file's last line when it is not terminated by a newline: a SIGKILL
// can cut the final write short, so that fragment is dropped.
func ReadHistory(paths ...string) ([]Event, error) {
	var all []Event
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			return nil, fmt.Errorf("checker: read history: %w", err)
		}
		evs, err := ParseHistory(f, p)
		f.Close()
		if err != nil {
			return nil, err
		}
		all = append(all, evs...)
	}
	SortEvents(all)
	return all, nil
}

// ParseHistory parses one JSONL history stream; name is used in Source and in
// errors. The result is in stream order.
func ParseHistory(r io.Reader, name string) ([]Event, error) {
	br := bufio.NewReader(r)
	var out []Event
	for line := 1; ; line++ {
		b, err := br.ReadBytes('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("checker: read %s:%d: %w", name, line, err)
		}
		terminated := len(b) > 0 && b[len(b)-1] == '\n'
		text := strings.TrimSpace(string(b))
		if text != "" {
			ev, perr := parseEvent([]byte(text))
			switch {
			case perr == nil:
				ev.Source = fmt.Sprintf("%s:%d", name, line)
				ev.Raw = text
				out = append(out, ev)
			case !terminated && errors.Is(err, io.EOF):
				// 1. A torn final write from a killed worker: drop it.
			default:
				return nil, fmt.Errorf("%w: %s:%d: %v: %q", ErrMalformed, name, line, perr, clip(text, 200))
			}
		}
		if errors.Is(err, io.EOF) {
			return out, nil
		}
	}
}

func parseEvent(b []byte) (Event, error) {
	var ev Event
	if !bytes.HasPrefix(b, []byte("{")) {
		return ev, errors.New("not a JSON object")
	}
	if err := json.Unmarshal(b, &ev); err != nil {
		return ev, err
	}
	var missing []string
	if ev.T.IsZero() {
		missing = append(missing, "t")
	}
	if ev.Identity == "" {
		missing = append(missing, "identity")
	}
	if ev.Event == "" {
		missing = append(missing, "event")
	}
	if len(missing) > 0 {
		return ev, fmt.Errorf("missing %s", strings.Join(missing, ", "))
	}
	return ev, nil
}

// SortEvents sorts events by wall time, keeping the relative order of equal
// times (so one file's order survives ties).
func SortEvents(evs []Event) {
	sort.SliceStable(evs, func(i, j int) bool { return evs[i].T.Before(evs[j].T) })
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
