package bench

import (
	"math"
	"testing"
)

func TestPercentile_NearestRank(t *testing.T) {
	sorted := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	tests := []struct {
		name string
		p    float64
		want float64
	}{
		{"p50 of ten is the fifth", 50, 5},
		{"p99 of ten is the max", 99, 10},
		{"p10 is the first", 10, 1},
		{"p11 rounds up to the second", 11, 2},
		{"p100 is the max", 100, 10},
		{"tiny p is the min", 0.001, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Percentile(sorted, tt.p); got != tt.want {
				t.Errorf("Percentile(1..10, %v) = %v, want %v", tt.p, got, tt.want)
			}
		})
	}
	if !math.IsNaN(Percentile(nil, 50)) {
		t.Error("Percentile of an empty sample should be NaN")
	}
}

func TestPercentile_HundredValues(t *testing.T) {
	var xs []float64
	for i := 1; i <= 200; i++ {
		xs = append(xs, float64(i))
	}
	if got := Percentile(xs, 99); got != 198 {
		t.Errorf("p99 of 1..200 = %v, want 198", got)
	}
}

func TestSummarize(t *testing.T) {
	s := Summarize([]float64{4, 2, 8, 6}) // unsorted on purpose
	if s.N != 4 || s.Min != 2 || s.Max != 8 || s.P50 != 4 || s.P99 != 8 || s.Mean != 5 {
		t.Fatalf("Summarize = %+v, want n 4, min 2, p50 4, p99 8, max 8, mean 5", s)
	}
	if want := math.Sqrt(20.0 / 3); math.Abs(s.SD-want) > 1e-12 {
		t.Errorf("SD = %v, want %v (sample standard deviation)", s.SD, want)
	}
	one := Summarize([]float64{3})
	if one.SD != 0 || one.P99 != 3 {
		t.Errorf("Summarize of one value = %+v, want SD 0 and p99 3", one)
	}
	if e := Summarize(nil); e.N != 0 || !math.IsNaN(e.P50) {
		t.Errorf("Summarize(nil) = %+v, want N 0 and NaN figures", e)
	}
}

func TestSummarize_DoesNotReorderInput(t *testing.T) {
	xs := []float64{3, 1, 2}
	Summarize(xs)
	if xs[0] != 3 || xs[1] != 1 || xs[2] != 2 {
		t.Errorf("Summarize reordered its input: %v", xs)
	}
}

func TestRatio(t *testing.T) {
	if got := Ratio(3, 2); got != 1.5 {
		t.Errorf("Ratio(3, 2) = %v, want 1.5", got)
	}
	if !math.IsNaN(Ratio(1, 0)) || !math.IsNaN(Ratio(math.NaN(), 1)) {
		t.Error("Ratio with a zero or NaN operand should be NaN")
	}
}
