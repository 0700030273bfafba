package status

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

// NewHealthGauge exports blobleader_healthy: 1 while healthy() (what
// /healthz answers) returns nil, read at scrape time, so a scrape sees a
// failing health without probing (docs/architecture.md#log-lines-the-alerts-read).
func NewHealthGauge(healthy func() error) prometheus.Collector {
	return prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "blobleader_healthy",
		Help: "1 if /healthz would answer 200 at the moment of the scrape, else 0.",
	}, func() float64 { return one(healthy() == nil) })
}

// NewReadyGauge exports blobleader_ready: 1 while ready() (what /readyz
// answers) returns nil, read at scrape time. Not ready is what a restart
// does not cure — a lock record nobody can lead on, a conflicting set-up,
// a backoff, storage that does not answer — so it is a metric and an alert,
// never a liveness failure (docs/architecture.md#worker-contracts).
func NewReadyGauge(ready func() error) prometheus.Collector {
	return prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "blobleader_ready",
		Help: "1 if /readyz would answer 200 at the moment of the scrape, else 0 (a lock record nobody can lead on, a conflicting set-up, a backoff, no answer from storage).",
	}, func() float64 { return one(ready() == nil) })
}

// NewConflictGauge exports blobleader_setup_conflict: 1 while conflict()
// (read at scrape time) names a conflicting set-up — another process under
// this worker's identity, a contender of another mode on its lock, pool
// members of another size (docs/architecture.md#conflicting-set-ups).
func NewConflictGauge(conflict func() string) prometheus.Collector {
	return prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "blobleader_setup_conflict",
		Help: "1 while this worker sees a set-up conflicting with its own (its identity used by another process, another mode on its lock, pool members of another --shards); /healthz and the setup_conflict log line say which.",
	}, func() float64 { return one(conflict() != "") })
}

// NewShardOwnership exports the shards a worker holds the leases of, read
// at scrape time from owned: blobleader_shard_owned{shard="3"} 1 per owned
// shard, and blobleader_shards_owned, their count.
func NewShardOwnership(owned func() []int) prometheus.Collector {
	return &shardOwnership{
		owned: owned,
		one:   prometheus.NewDesc("blobleader_shard_owned", "1 for each shard whose lease this worker holds at the moment of the scrape.", []string{"shard"}, nil),
		count: prometheus.NewDesc("blobleader_shards_owned", "How many shards this worker holds the leases of at the moment of the scrape.", nil, nil),
	}
}

// NewShardsUnowned exports blobleader_shards_unowned, read at scrape time
// from unowned: on the worker that coordinates a shard pool, the shards the
// assignment in force gives an owner while its last listing showed no lease
// held on them; 0 on every other worker.
func NewShardsUnowned(unowned func() (count int, coordinating bool)) prometheus.Collector {
	return prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "blobleader_shards_unowned",
		Help: "On the pool's leader: shards assigned an owner while no lease on them is held, as its last listing (every retry period) showed. 0 on other workers.",
	}, func() float64 {
		if n, ok := unowned(); ok {
			return float64(n)
		}
		return 0
	})
}

type shardOwnership struct {
	owned func() []int
	one   *prometheus.Desc
	count *prometheus.Desc
}

func (s *shardOwnership) Describe(ch chan<- *prometheus.Desc) { ch <- s.one; ch <- s.count }

func (s *shardOwnership) Collect(ch chan<- prometheus.Metric) {
	owned := s.owned()
	for _, n := range owned {
		ch <- prometheus.MustNewConstMetric(s.one, prometheus.GaugeValue, 1, strconv.Itoa(n))
	}
	ch <- prometheus.MustNewConstMetric(s.count, prometheus.GaugeValue, float64(len(owned)))
}
