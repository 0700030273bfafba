package status

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/blobleader/blobleader/worker/election"
	"github.com/blobleader/blobleader/worker/internal/buildinfo"
)

// Metrics are the worker's Prometheus metrics
// (docs/architecture.md#worker-contracts). Leadership and
// term are computed from the elector at scrape time, never cached, so a
// scrape after a pause cannot report a lapsed leadership.
type Metrics struct {
	Registry    *prometheus.Registry
	transitions prometheus.Counter
	storage     *StorageRequests
	repairs     *prometheus.CounterVec

	mu        sync.Mutex
	moreLocks func() string // AlsoUnusable's source; nil: none
}

// NewMetrics registers the metrics for elector e (which may be set later via
// the returned value's methods reading through get).
func NewMetrics(get func() *election.Elector) *Metrics {
	m := &Metrics{
		Registry: prometheus.NewRegistry(),
		transitions: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "blobleader_transitions_total",
			Help: "Leadership transitions of this worker (started plus stopped leading).",
		}),
		storage: NewStorageRequests(),
		repairs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "blobleader_repairs_total",
			Help: "Stored state this worker found gone bad and wrote again under its own term, by object (assignment, summary, ledger) and cause (missing, rolled_back, not_valid, term_above_lock, foreign_segment, not_a_ledger).",
		}, []string{"object", "cause"}),
	}
	isLeader := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "blobleader_is_leader",
		Help: "1 if this worker leads at the moment of the scrape (checked against its renew deadline), else 0.",
	}, fromElector(get, func(e *election.Elector) float64 { return one(e.IsLeader()) }))
	term := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "blobleader_term",
		Help: "The term this worker leads, or the last term it observed.",
	}, fromElector(get, func(e *election.Elector) float64 { return float64(e.Status().Term) }))
	unusable := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "blobleader_lock_record_unusable",
		Help: "1 while the lock's record — or, with --shards, a shard lock's this worker contends for — cannot give a next term (an unparsable term, or one that cannot grow): no contender can lead on it until an operator repairs it; /status says why.",
	}, func() float64 { return one(m.unusable(get)) })
	stalled := prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: "blobleader_no_progress_stepdowns_total",
		Help: "Leaderships of this worker that ended without progress (work that landed): its stall watchdog's, no progress for the watchdog timeout, and those whose task said it made none (run mode: a command that exited at once); each lengthens the backoff.",
	}, fromElector(get, func(e *election.Elector) float64 { return float64(e.NoProgressStepDowns()) }))
	m.Registry.MustRegister(isLeader, term, unusable, stalled, m.transitions, m.repairs, NewBuildInfo())
	m.Registry.MustRegister(m.storage.Collectors()...)
	return m
}

// fromElector reads a metric from the elector at scrape time: f of it, or 0
// while there is none yet.
func fromElector(get func() *election.Elector, f func(*election.Elector) float64) func() float64 {
	return func() float64 {
		if e := get(); e != nil {
			return f(e)
		}
		return 0
	}
}

// unusable reports whether the election's lock record, or one AlsoUnusable
// reports, cannot give a next term.
func (m *Metrics) unusable(get func() *election.Elector) bool {
	if e := get(); e != nil && e.Status().Unusable != "" {
		return true
	}
	m.mu.Lock()
	more := m.moreLocks
	m.mu.Unlock()
	return more != nil && more() != ""
}

// one is a boolean gauge's value.
func one(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// AlsoUnusable makes blobleader_lock_record_unusable count the lock records
// unusable reports too (a --shards worker's shard locks: why, or "" when
// none is): the gauge is 1 while the election's record or any of those is.
func (m *Metrics) AlsoUnusable(unusable func() string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.moreLocks = unusable
}

// ObserveRequest records one storage request (a bloblock.ObserveFunc).
func (m *Metrics) ObserveRequest(op, code string, took time.Duration) {
	m.storage.Observe(op, code, took)
}

// StorageRequests are the storage request metrics every blobleader process
// exports — the worker in every mode and the lock service — under the same
// names, so that one rule and one dashboard panel read them all.
type StorageRequests struct {
	requests  *prometheus.CounterVec
	durations *prometheus.HistogramVec
}

// NewStorageRequests returns the metrics, not yet registered (Collectors).
func NewStorageRequests() *StorageRequests {
	return &StorageRequests{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "blobleader_storage_requests_total",
			Help: "Storage requests by operation and outcome (HTTP status, or timeout/error without a response).",
		}, []string{"op", "code"}),
		durations: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "blobleader_storage_request_duration_seconds",
			Help:    "Storage request latency by operation.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5},
		}, []string{"op"}),
	}
}

// Collectors are the metrics to register.
func (s *StorageRequests) Collectors() []prometheus.Collector {
	return []prometheus.Collector{s.requests, s.durations}
}

// Observe records one storage request (a bloblock.ObserveFunc).
func (s *StorageRequests) Observe(op, code string, took time.Duration) {
	s.requests.WithLabelValues(op, code).Inc()
	s.durations.WithLabelValues(op).Observe(took.Seconds())
}

// NewBuildInfo is blobleader_build_info: 1, labelled with what the build
// recorded (worker/internal/buildinfo). The worker and the lock service
// both export it.
func NewBuildInfo() prometheus.Collector {
	info := buildinfo.Read()
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name:        "blobleader_build_info",
		Help:        "1, labelled with the binary's module version (its tag, or (devel)), the Go version and the VCS revision the build recorded (empty when none).",
		ConstLabels: prometheus.Labels{"version": info.Version, "goversion": info.GoVersion, "revision": info.Revision},
	})
	g.Set(1)
	return g
}

// NewLogDrops is the counter of log records the bounded log dropped
// (docs/architecture.md#logs).
func NewLogDrops(dropped func() uint64) prometheus.Collector {
	return prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: "blobleader_log_records_dropped_total",
		Help: "Log records lost because the log output (stderr) was blocked, too slow or refused the write (a full disk); the election never waits on it.",
	}, func() float64 { return float64(dropped()) })
}

// Repaired counts one repair of stored state (docs/architecture.md#shards,
// "State we did not write is validated, never trusted"): object is what was
// repaired, cause why.
func (m *Metrics) Repaired(object, cause string) {
	m.repairs.WithLabelValues(object, cause).Inc()
}

// ObserveEvent counts leadership transitions.
func (m *Metrics) ObserveEvent(ev election.Event) {
	if ev.Kind == election.EventStartedLeading || ev.Kind == election.EventStoppedLeading {
		m.transitions.Inc()
	}
}

// CountDrops exposes how many records the bounded side channels dropped
// (docs/architecture.md#logs): logs and history are written from queues that
// never make the safety path wait, and lose records, counted, when their
// output is blocked. history may return 0 when there is no history.
func (m *Metrics) CountDrops(logs, history func() uint64) {
	m.Registry.MustRegister(
		NewLogDrops(logs),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "blobleader_history_records_dropped_total",
			Help: "History records lost: dropped because the history sink (--history file or blob) was blocked, too slow, unreachable or refused the write (a full disk), deleted with a history blob, or still unwritten when the final flush gave up.",
		}, func() float64 { return float64(history()) }),
	)
}
