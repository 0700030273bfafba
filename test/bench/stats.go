package bench

import (
	"math"
	"slices"
)

// Stats summarises a sample of durations or counts (in the caller's unit).
type Stats struct {
	N    int     `json:"n"`
	Min  float64 `json:"min"`
	P50  float64 `json:"p50"`
	P99  float64 `json:"p99"`
	Max  float64 `json:"max"`
	Mean float64 `json:"mean"`
	SD   float64 `json:"sd"` // sample standard deviation; 0 for fewer than two values
}

// Percentile returns the p-th percentile (0 < p ≤ 100) of sorted by the
// nearest-rank method: the smallest value with at least p % of the sample at
// or below it. With fewer than 100 values p99 is therefore the maximum, which
// is the honest answer for small samples. NaN for an empty sample.
func Percentile(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return math.NaN()
	}
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	rank = min(max(rank, 1), len(sorted))
	return sorted[rank-1]
}

// Summarize computes Stats of xs (xs is not modified).
func Summarize(xs []float64) Stats {
	s := Stats{N: len(xs)}
	if len(xs) == 0 {
		nan := math.NaN()
		s.Min, s.P50, s.P99, s.Max, s.Mean, s.SD = nan, nan, nan, nan, nan, nan
		return s
	}
	sorted := slices.Clone(xs)
	slices.Sort(sorted)
	s.Min, s.Max = sorted[0], sorted[len(sorted)-1]
	s.P50 = Percentile(sorted, 50)
	s.P99 = Percentile(sorted, 99)
	var sum float64
	for _, x := range sorted {
		sum += x
	}
	s.Mean = sum / float64(len(sorted))
	if len(sorted) > 1 {
		var ss float64
		for _, x := range sorted {
			ss += (x - s.Mean) * (x - s.Mean)
		}
		s.SD = math.Sqrt(ss / float64(len(sorted)-1))
	}
	return s
}

// Ratio is a/b, NaN when b is 0 or either is NaN.
func Ratio(a, b float64) float64 {
	if b == 0 || math.IsNaN(a) || math.IsNaN(b) {
		return math.NaN()
	}
	return a / b
}
