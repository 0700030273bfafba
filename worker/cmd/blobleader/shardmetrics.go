package main

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

// shardOwnership exports the shards this worker holds the leases of, read
// at scrape time: blobleader_shard_owned{shard="3"} 1 per owned shard, and
// blobleader_shards_owned, their count (the dashboard's shard-ownership
// panels; docs/architecture.md, "Log lines the alerts read").
type shardOwnership struct {
	owned func() []int
	one   *prometheus.Desc
	count *prometheus.Desc
}

func newShardOwnership(owned func() []int) *shardOwnership {
	return &shardOwnership{
		owned: owned,
		one:   prometheus.NewDesc("blobleader_shard_owned", "1 for each shard whose lease this worker holds at the moment of the scrape.", []string{"shard"}, nil),
		count: prometheus.NewDesc("blobleader_shards_owned", "How many shards this worker holds the leases of at the moment of the scrape.", nil, nil),
	}
}

func (s *shardOwnership) Describe(ch chan<- *prometheus.Desc) { ch <- s.one; ch <- s.count }

func (s *shardOwnership) Collect(ch chan<- prometheus.Metric) {
	owned := s.owned()
	for _, n := range owned {
		ch <- prometheus.MustNewConstMetric(s.one, prometheus.GaugeValue, 1, strconv.Itoa(n))
	}
	ch <- prometheus.MustNewConstMetric(s.count, prometheus.GaugeValue, float64(len(owned)))
}
