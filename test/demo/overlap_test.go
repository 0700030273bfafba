package main

import (
	"slices"
	"testing"
)

func TestOverlapCheck(t *testing.T) {
	type answer struct {
		worker string
		shards []int // nil with gap: the worker did not answer
		gap    bool
	}
	tests := []struct {
		name     string
		answers  []answer
		want     []overlap
		brackets int64
	}{
		{
			name: "a move between sweeps is no overlap",
			answers: []answer{
				{worker: "w1", shards: []int{0, 1}}, {worker: "w2", shards: []int{2}},
				{worker: "w1", shards: []int{0}}, {worker: "w2", shards: []int{1, 2}},
				{worker: "w1", shards: []int{0}}, {worker: "w2", shards: []int{1, 2}},
			},
			brackets: 5, // w1's 0 over w2 twice; w2's 2 over w1, then its 1 and 2
		},
		{
			name: "both claim in one sweep, the first lets go before its next answer: no overlap",
			answers: []answer{
				{worker: "w1", shards: []int{3}}, {worker: "w2", shards: []int{3}},
				{worker: "w1", shards: []int{}}, {worker: "w2", shards: []int{3}},
			},
			brackets: 1,
		},
		{
			name: "the first still owns it after the second said it owns it: overlap",
			answers: []answer{
				{worker: "w1", shards: []int{3}}, {worker: "w2", shards: []int{3}},
				{worker: "w1", shards: []int{3}},
			},
			want:     []overlap{{Shard: 3, A: "w1", B: "w2"}},
			brackets: 1,
		},
		{
			name: "an overlap proved again each sweep, in both orders, is one distinct overlap",
			answers: []answer{
				{worker: "w1", shards: []int{3}}, {worker: "w2", shards: []int{3}},
				{worker: "w1", shards: []int{3}}, {worker: "w2", shards: []int{3}},
			},
			want:     []overlap{{Shard: 3, A: "w1", B: "w2"}, {Shard: 3, A: "w2", B: "w1"}},
			brackets: 2,
		},
		{
			name: "a gap in the first's answers brackets nothing",
			answers: []answer{
				{worker: "w1", shards: []int{3}}, {worker: "w2", shards: []int{3}},
				{worker: "w1", gap: true}, {worker: "w1", shards: []int{3}},
			},
		},
		{
			name: "the third worker's claim inside the first's",
			answers: []answer{
				{worker: "w1", shards: []int{5}}, {worker: "w2", shards: []int{1}}, {worker: "w3", shards: []int{5}},
				{worker: "w1", shards: []int{5}},
			},
			want:     []overlap{{Shard: 5, A: "w1", B: "w3"}},
			brackets: 2,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := newOverlapCheck()
			for _, a := range tc.answers {
				if a.gap {
					c.gap(a.worker)
					continue
				}
				c.answered(a.worker, a.shards)
			}
			if !slices.Equal(c.overlaps, tc.want) {
				t.Errorf("overlaps %v, want %v", c.overlaps, tc.want)
			}
			if len(tc.want) > 0 && (len(c.distinct) != 1 || c.Times(tc.want[0]) != len(tc.want)) {
				t.Errorf("distinct overlaps %v, proved %d times: want %v once", c.distinct, c.Times(tc.want[0]), tc.want[0])
			}
			if c.brackets != tc.brackets {
				t.Errorf("%d brackets checked, want %d", c.brackets, tc.brackets)
			}
		})
	}
}
