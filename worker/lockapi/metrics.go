package lockapi

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/blobleader/blobleader/worker/status"
)

// Metrics are the lock service's Prometheus metrics
// (docs/architecture.md#resource-locks), served on /metrics. Build them
// before the storage client, whose requests ObserveStorage counts.
type Metrics struct {
	Registry *prometheus.Registry
	storage  *status.StorageRequests
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	inFlight *prometheus.GaugeVec
	grants   prometheus.Counter
	refusals *prometheus.CounterVec
	waits    *prometheus.HistogramVec
}

// Values of the metrics' labels.
const (
	protoHTTP = "http"
	protoGRPC = "grpc"

	// Reasons a lock, unlock or renew is refused (the answer is 200/OK, the
	// request did not act): the lock is held; it was granted too late to be
	// held (released again); there is no lock to unlock or renew; the lock
	// is another holding's.
	refusedHeld     = "held"
	refusedLate     = "late_grant"
	refusedNotFound = "not_found"
	refusedOthers   = "other_holding"
)

// NewMetrics registers the lock service's metrics in a registry of their own.
func NewMetrics() *Metrics {
	m := &Metrics{
		Registry: prometheus.NewRegistry(),
		storage:  status.NewStorageRequests(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "blobleader_locks_requests_total",
			Help: "Lock service requests answered, by protocol (http, grpc), method (lock, unlock, renew, read, metadata) and outcome (ok; invalid: malformed or another store; unauthorized; unimplemented; error: storage failed or the request ended first).",
		}, []string{"protocol", "method", "outcome"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "blobleader_locks_request_duration_seconds",
			Help:    "Lock service request latency, from arrival to answer (a waiting lock request's wait included), by protocol and method.",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60},
		}, []string{"protocol", "method"}),
		inFlight: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "blobleader_locks_requests_in_flight",
			Help: "Lock service requests being served now, by protocol.",
		}, []string{"protocol"}),
		grants: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "blobleader_locks_grants_total",
			Help: "Locks granted (lock answered success true).",
		}),
		refusals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "blobleader_locks_refusals_total",
			Help: "Lock, unlock and renew requests that did not act, by reason: held (lock: held by another holding or by this owner), late_grant (granted too late to be held; released), not_found (unlock/renew status 1), other_holding (unlock/renew status 2).",
		}, []string{"reason"}),
		waits: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "blobleader_locks_wait_duration_seconds",
			Help:    "Lock requests with waitSeconds > 0: how long they waited, by outcome (granted, timed_out, late_grant, error: storage failed or the client left).",
			Buckets: []float64{.1, .25, .5, 1, 2.5, 5, 10, 20, 30, 60},
		}, []string{"outcome"}),
	}
	m.Registry.MustRegister(m.requests, m.latency, m.inFlight, m.grants, m.refusals, m.waits)
	m.Registry.MustRegister(m.storage.Collectors()...)
	m.Registry.MustRegister(status.NewBuildInfo())
	for _, r := range []string{refusedHeld, refusedLate, refusedNotFound, refusedOthers} {
		m.refusals.WithLabelValues(r)
	}
	return m
}

// ObserveStorage records one storage request (a bloblock.ObserveFunc).
func (m *Metrics) ObserveStorage(op, code string, took time.Duration) {
	m.storage.Observe(op, code, took)
}

// begin counts a request in flight and returns its end, which records its
// latency and outcome.
func (m *Metrics) begin(protocol, method string) func(outcome string) {
	start := time.Now()
	g := m.inFlight.WithLabelValues(protocol)
	g.Inc()
	return func(outcome string) {
		g.Dec()
		m.latency.WithLabelValues(protocol, method).Observe(time.Since(start).Seconds())
		m.requests.WithLabelValues(protocol, method, outcome).Inc()
	}
}

// outcome names an answer for blobleader_locks_requests_total.
func outcome(e *apiError) string {
	switch {
	case e == nil:
		return "ok"
	case e.status == 400:
		return "invalid"
	case e.status == 401:
		return "unauthorized"
	case e.status == 501:
		return "unimplemented"
	}
	return "error"
}
