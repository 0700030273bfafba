package bench

import (
	"math"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/blobleader/blobleader/test/checker"
)

func TestRecovery_LastTakeOverOfTheVictimsShards(t *testing.T) {
	t0 := time.Date(2026, 11, 22, 22, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	iv := func(id string, a, b float64) checker.Interval {
		return checker.Interval{Identity: id, Start: at(a), End: at(b)}
	}
	fault := at(100)
	ivs := map[int][]checker.Interval{
		0: {iv("w1", 0, 115), iv("w2", 116, 200)},                     // the victim's: taken 16 s after the fault
		1: {iv("w1", 0, 112), iv("w3", 113.5, 200)},                   // the victim's: 13.5 s
		2: {iv("w2", 0, 200)},                                         // not the victim's
		3: {iv("w1", 0, 50), iv("w3", 51, 200)},                       // the victim's before, not at the fault
		4: {iv("w1", 0, 110), iv("w1", 150, 160)},                     // the victim's, only the victim again: missing
		5: {iv("w3", 0, 100), iv("w1", 101, 120), iv("w2", 130, 200)}, // the victim's only after the fault
	}
	r := Recovery(ivs, "w1", fault)
	if r.Owned != 3 {
		t.Errorf("Owned = %d, want 3 (shards 0, 1, 4)", r.Owned)
	}
	if !slices.Equal(r.Missing, []int{4}) {
		t.Errorf("Missing = %v, want [4]", r.Missing)
	}
	if !r.Again.Equal(at(116)) {
		t.Errorf("Again = %v after the fault, want 16 s", r.Again.Sub(fault))
	}
	if want := []time.Duration{16 * time.Second, 13500 * time.Millisecond}; !slices.Equal(r.Each, want) {
		t.Errorf("Each = %v, want %v", r.Each, want)
	}
}

func TestShardMoves_ClassifiesLeavesByFaultStart(t *testing.T) {
	t0 := time.Date(2026, 11, 22, 22, 0, 0, 0, time.UTC)
	sres := checker.ShardResult{Balance: []checker.BalanceCheck{
		{Change: t0, Moves: 5, Minimum: 5},
		{Change: t0.Add(time.Minute), Moves: 5, Minimum: 5},
		{Change: t0.Add(2 * time.Minute), Moves: 6, Minimum: -1},
	}}
	faults := []checker.Fault{{Kind: checker.FaultCrash, Target: "w2", Start: t0}, {Kind: checker.FaultGraceful, Target: "w3", Start: t0.Add(2 * time.Minute)}}
	got := shardMoves(sres, faults)
	want := []ShardMove{{"crash", 5, 5}, {"join", 5, 5}, {"graceful", 6, -1}}
	if !slices.Equal(got, want) {
		t.Errorf("shardMoves = %v, want %v", got, want)
	}
}

func TestBuckets_ParseSumsOpsAndQuantileIsABucketBound(t *testing.T) {
	text := `# TYPE blobleader_storage_request_duration_seconds histogram
blobleader_storage_request_duration_seconds_bucket{op="renew",le="0.005"} 50
blobleader_storage_request_duration_seconds_bucket{op="renew",le="0.01"} 90
blobleader_storage_request_duration_seconds_bucket{op="renew",le="+Inf"} 100
blobleader_storage_request_duration_seconds_bucket{op="acquire",le="0.005"} 40
blobleader_storage_request_duration_seconds_bucket{op="acquire",le="0.01"} 97
blobleader_storage_request_duration_seconds_bucket{op="acquire",le="+Inf"} 100
blobleader_storage_request_duration_seconds_count{op="acquire"} 100
blobleader_storage_requests_total{op="acquire",code="201"} 100
`
	b, err := ParseBuckets(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	if b.Count() != 200 || b[0.005] != 90 || b[0.01] != 187 {
		t.Fatalf("ParseBuckets = %v, want 0.005: 90, 0.01: 187, +Inf: 200", b)
	}
	if q := b.Quantile(0.5); q != 0.01 {
		t.Errorf("p50 = %v, want 0.01 (90 of 200 are ≤ 0.005)", q)
	}
	if q := b.Quantile(0.99); !math.IsInf(q, 1) {
		t.Errorf("p99 = %v, want +Inf (only 187 of 200 are ≤ 0.01)", q)
	}
	before := Buckets{0.005: 90, 0.01: 90, math.Inf(1): 90}
	if d := b.Sub(before); d.Count() != 110 || d.Quantile(0.5) != 0.01 {
		t.Errorf("Sub = %v", d)
	}
	if q := (Buckets{}).Quantile(0.99); !math.IsNaN(q) {
		t.Errorf("Quantile without requests = %v, want NaN", q)
	}
}

func TestRender_ShardsSection(t *testing.T) {
	dir := t.TempDir()
	md := dir + "/benchmarks.md"
	r := Results{Shards: &ShardsResult{
		Runs: []ShardRunResult{{Job: "ours-shards-crash", Kind: "crash", Shards: 16, Workers: 3, Violations: map[string]int{},
			Trials: []ShardTrial{{Kind: "crash", Victim: "w2", Owned: 5, FromFault: 15.5, MaxFromBasis: 16.4, Bound: 17.1}, {Kind: "crash", Victim: "w3", Owned: 6, Note: "shards [3] never owned again"}},
			Moves:  []ShardMove{{"crash", 5, 5}, {"join", 6, 5}}}},
		Cost:  []ShardCostResult{{Job: "c", Shards: 16, WindowS: 60, Workers: []RoleCost{{Identity: "w1", Role: "leader", ByOp: map[string]float64{"renew": 3600}, Election: 3600}}, Owned: []int{16}}},
		Scale: []ShardScaleResult{{Shards: 256, Workers: 10, BalanceS: 12.5, PerShard: []float64{15, 16}, P50: 0.005, P99: 0.05, Violations: map[string]int{"shard L1": 1}}},
	}}
	if err := Render(r, md, dir+"/bench", "bench"); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(md)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"## 9. Shards",
		"| crash (SIGKILL): slowest shard from the owner's last renew | 16.40 | 16.40 | 16.40 | 16.40 – 16.40, sd 0.00, n 1 | L + 1.1·P + ε = 17.10 s; over it: 0 of 1 |",
		"| crash (SIGKILL): shards the victim owned; inconclusive trials | 5; 1 | |",
		"| join (the victim restarted) | 1 | 6 | 5 | 1 |",
		"| w1 | leader | 16 | 3,600 | 0 | 3,600 | 1.16 | 1.16 |",
		"**Scale: 256 shards over 10 workers",
		"≤ 0.005 / ≤ 0.05 s",
		"shard L1 × 1",
	} {
		if !strings.Contains(string(b), want) {
			t.Errorf("benchmarks.md lacks %q", want)
		}
	}
}
