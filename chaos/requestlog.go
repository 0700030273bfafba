package chaos

import (
	"bufio"
	"encoding/json"
	"io"
	"sync"
	"time"
)

// RequestRecord is what the HTTP proxy saw of one request: when it arrived
// (headers read), when it left for storage, when storage answered or the
// round trip failed. A failed run's files then say which hop stalled: a
// request that never arrived (the client was stuck), one that arrived and
// was never forwarded (the proxy), or one forwarded and never answered
// (storage).
type RequestRecord struct {
	Proxy     string    `json:"proxy"`
	Op        Op        `json:"op"`
	Path      string    `json:"path,omitempty"` // the URL path: /account/container/blob
	Arrived   time.Time `json:"arrived"`
	Forwarded time.Time `json:"forwarded,omitzero"` // zero: never sent to storage
	Answered  time.Time `json:"answered,omitzero"`  // storage's answer or the error
	Status    int       `json:"status,omitzero"`    // 0: no answer
	Err       string    `json:"err,omitzero"`
	Held      bool      `json:"held,omitempty"`    // taken over by a fault's hold
	Dropped   bool      `json:"dropped,omitempty"` // answer dropped by a fault
	// The connection to storage it went out on: Reused from the proxy's
	// pool after IdleFor without traffic (a server closes idle connections;
	// one reused just as it does is reset).
	Reused  bool          `json:"reused,omitempty"`
	IdleFor time.Duration `json:"idle_for,omitzero"`
}

// DefaultRequestLogSize is how many requests each proxy keeps: the last
// few minutes of a worker's traffic (a renew every 2 s, polls, appends).
const DefaultRequestLogSize = 4096

// RequestLog is a bounded ring of the latest RequestRecords. Add holds its
// lock only to copy one record in, so it never blocks a request on I/O;
// WriteJSONL copies the ring under the lock and writes outside it.
type RequestLog struct {
	mu    sync.Mutex
	ring  []RequestRecord
	next  int    // slot the next record goes to
	total uint64 // records ever added
}

// NewRequestLog returns a ring keeping the last size records (size < 1: 1).
func NewRequestLog(size int) *RequestLog {
	return &RequestLog{ring: make([]RequestRecord, max(size, 1))}
}

// Add records r, overwriting the oldest record when the ring is full.
func (l *RequestLog) Add(r RequestRecord) {
	l.mu.Lock()
	l.ring[l.next] = r
	l.next = (l.next + 1) % len(l.ring)
	l.total++
	l.mu.Unlock()
}

// Records returns the kept records, oldest first, and how many older ones
// the ring has overwritten.
func (l *RequestLog) Records() (recs []RequestRecord, overwritten uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := uint64(len(l.ring))
	if l.total <= n {
		return append([]RequestRecord(nil), l.ring[:l.total]...), 0
	}
	recs = make([]RequestRecord, 0, n)
	recs = append(recs, l.ring[l.next:]...)
	recs = append(recs, l.ring[:l.next]...)
	return recs, l.total - n
}

// WriteJSONL writes the kept records to w, one JSON object a line, oldest
// first; when older records were overwritten, a first line
// {"overwritten": N} says so.
func (l *RequestLog) WriteJSONL(w io.Writer) error {
	recs, lost := l.Records()
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	if lost > 0 {
		if err := enc.Encode(map[string]uint64{"overwritten": lost}); err != nil {
			return err
		}
	}
	for _, r := range recs {
		if err := enc.Encode(r); err != nil {
			return err
		}
	}
	return bw.Flush()
}
