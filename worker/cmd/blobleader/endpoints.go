package main

import (
	"errors"
	"net/http"
	"strings"

	"github.com/blobleader/blobleader/worker/status"
)

// The HTTP endpoints on --listen (docs/architecture.md#worker-contracts):
// /healthz, /readyz, /status and /metrics are the contract's handler for the
// elector (worker/status), which each companion extends. The node's health
// is the elector's joined with each companion's; it is what
// blobleader_healthy and the status log line report, and what /healthz
// answers with every companion's handler in place. The control endpoint
// (--control-listen) is control.go's.

// handler is what --listen serves: the contract's handler, extended by
// each companion in turn.
func (n *node) handler() http.Handler {
	h := status.Handler(n.elector, n.metrics)
	for _, c := range n.companions {
		h = c.handler(n.elector, h)
	}
	return h
}

// health is the node's health (nil: healthy): the elector's joined with
// each companion's.
func (n *node) health() error {
	errs := []error{n.elector.Healthy()}
	for _, c := range n.companions {
		errs = append(errs, c.healthy())
	}
	return errors.Join(errs...)
}

// A readinessReporter is a companion with its own part of /readyz: what
// keeps it from doing its work that a restart does not cure (nil: ready).
type readinessReporter interface {
	ready() error
}

// ready is the node's readiness (nil: ready): the elector's joined with
// each companion's that reports one; what blobleader_ready and the status
// log line report.
func (n *node) ready() error {
	errs := []error{n.elector.Ready()}
	for _, c := range n.companions {
		if r, ok := c.(readinessReporter); ok {
			errs = append(errs, r.ready())
		}
	}
	return errors.Join(errs...)
}

// conflict is what blobleader_setup_conflict reads: the elector's conflict
// joined with each companion's.
func (n *node) conflict() string {
	out := n.elector.Status().Conflict
	for _, c := range n.companions {
		r, ok := c.(conflictReporter)
		if !ok {
			continue
		}
		if s := r.conflict(); s != "" {
			out = strings.TrimPrefix(out+"; "+s, "; ")
		}
	}
	return out
}

// answerProbe answers a health probe: 200 "ok", or 503 and the reason.
func answerProbe(w http.ResponseWriter, err error) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	if err != nil {
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte(err.Error() + "\n"))
		return
	}
	_, _ = w.Write([]byte("ok\n"))
}
