package bench

import (
	"context"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"

	"github.com/blobleader/blobleader/test/cluster"
)

// Buckets is blobleader_storage_request_duration_seconds summed over ops:
// the cumulative count of requests at or below each upper bound (le, in
// seconds; +Inf included).
type Buckets map[float64]float64

// ParseBuckets reads Prometheus text (GET /metrics) and sums the request
// duration histogram's buckets over ops.
func ParseBuckets(r io.Reader) (Buckets, error) {
	out := Buckets{}
	err := cluster.EachSample(r, "blobleader_storage_request_duration_seconds_bucket", func(labels, value string) error {
		le := cluster.Label(labels, "le")
		if le == "" {
			return nil
		}
		bound, err := strconv.ParseFloat(le, 64) // "+Inf" parses as +Inf
		if err != nil {
			return fmt.Errorf("bucket le %q: %w", le, err)
		}
		v, err := strconv.ParseFloat(value, 64)
		if err != nil {
			return fmt.Errorf("bucket value %q: %w", value, err)
		}
		out[bound] += v
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Add adds o's counts to b.
func (b Buckets) Add(o Buckets) {
	for k, v := range o {
		b[k] += v
	}
}

// Sub returns b − before, bucket by bucket.
func (b Buckets) Sub(before Buckets) Buckets {
	out := Buckets{}
	for k, v := range b {
		out[k] = v - before[k]
	}
	return out
}

// Count is the number of requests (the +Inf bucket).
func (b Buckets) Count() float64 { return b[math.Inf(1)] }

// Quantile returns the upper bound of the first bucket whose cumulative
// count reaches q of all requests: the q-quantile is at most that (a bucket
// bound, not an interpolation). +Inf when it lies above the last finite
// bound, NaN without requests.
func (b Buckets) Quantile(q float64) float64 {
	total := b.Count()
	if total <= 0 {
		return math.NaN()
	}
	bounds := make([]float64, 0, len(b))
	for k := range b {
		bounds = append(bounds, k)
	}
	slices.Sort(bounds)
	for _, k := range bounds {
		if b[k] >= q*total {
			return k
		}
	}
	return math.Inf(1)
}

func scrapeBuckets(ctx context.Context, listen string) (Buckets, error) {
	return scrapeWith(ctx, listen, ParseBuckets)
}
