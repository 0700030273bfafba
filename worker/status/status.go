// Package status serves the worker's HTTP endpoints
// (docs/architecture.md#worker-contracts):
// /healthz, /readyz, /status and /metrics.
package status

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/blobleader/blobleader/worker/election"
)

// Document is the /status body. Its shape is a contract: keep it stable.
// Names: the first six fields are the design's document and keep its names
// (leaseDuration); every field added after them is snake_case, as the logs
// and the history are (leader_confirmed_at). A name is never changed or
// doubled: tools read both (docs/architecture.md#worker-contracts).
type Document struct {
	Identity      string `json:"identity"`
	Role          string `json:"role"`
	Term          int64  `json:"term"`
	Leader        string `json:"leader"`
	LeaseDuration string `json:"leaseDuration"`
	Since         string `json:"since"`
	// Unusable (additive, omitted when empty) says why this contender
	// cannot lead whatever it wins: the lock's record cannot give a next
	// term (lease.ErrUnusableRecord).
	Unusable string `json:"unusable,omitempty"`
	// LeaderConfirmedAt (additive, omitted when no leader is known) is when
	// storage last confirmed the leader named in Leader (RFC 3339, UTC):
	// the leader's own last renew, a follower's last read of the lock's
	// record that named it (election.Status.LeaderConfirmed).
	LeaderConfirmedAt string `json:"leader_confirmed_at,omitempty"`
}

// NewDocument snapshots e. The role is computed against the renew deadline
// now (Elector.Status), never cached.
func NewDocument(e *election.Elector) Document {
	s := e.Status()
	d := Document{
		Identity:      s.Identity,
		Role:          string(s.Role),
		Term:          s.Term,
		Leader:        s.Leader,
		LeaseDuration: e.Config().LeaseDuration.String(),
		Since:         s.Since.UTC().Format(time.RFC3339Nano),
		Unusable:      s.Unusable,
	}
	if !s.LeaderConfirmed.IsZero() {
		d.LeaderConfirmedAt = s.LeaderConfirmed.UTC().Format(time.RFC3339Nano)
	}
	return d
}

// Handler serves the endpoints for elector e with metrics m.
func Handler(e *election.Elector, m *Metrics) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		probe(w, e.Healthy())
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		probe(w, e.Ready())
	})
	mux.HandleFunc("GET /status", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		_ = json.NewEncoder(w).Encode(NewDocument(e))
	})
	mux.Handle("GET /metrics", promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{}))
	return mux
}

func probe(w http.ResponseWriter, err error) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	if err != nil {
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte(err.Error() + "\n"))
		return
	}
	_, _ = w.Write([]byte("ok\n"))
}
