package bench

import (
	"math"
	"testing"
)

func TestCategory(t *testing.T) {
	tests := map[string]string{
		"acquire": "other", "renew": "other", "get": "other", "update": "other",
		"create_container": "list", "create_blob": "write",
		"ledger_append": "write", "ledger_seal": "write", "ledger_get": "other", "ledger_read": "read",
		"history_append": "write",
		// --shards: the assignment is a Get Blob, the pool a List Blobs, a
		// member's report a Put Blob; member_gc is a Delete Blob (free on
		// GPv2; priced as "other", an upper bound).
		"assignment_read": "read", "pool_list": "list", "report_write": "write", "member_gc": "other",
		// The fenced documents (worker/shard/fenced.go): <doc>_read is a Get
		// Blob, <doc>_write a Put Blob, <doc>_get a Get Blob Properties.
		"report_read": "read", "summary_write": "write", "assignment_write": "write", "assignment_get": "other",
	}
	for op, want := range tests {
		if got := Category(op); got != want {
			t.Errorf("Category(%q) = %q, want %q", op, got, want)
		}
	}
}

func TestMonthlyUSD(t *testing.T) {
	// 3,600 renews an hour for 730 h at $0.0044 per 10k = $1.1563.
	got := MonthlyUSD(map[string]float64{"renew": 3600, "ledger_append": 3600}, IsElectionOp)
	if want := 3600 * 730 / 10000.0 * 0.0044; math.Abs(got-want) > 1e-9 {
		t.Errorf("MonthlyUSD(election only) = %v, want %v", got, want)
	}
	all := MonthlyUSD(map[string]float64{"renew": 3600, "ledger_append": 3600}, nil)
	if want := 3600 * 730 / 10000.0 * (0.0044 + 0.055); math.Abs(all-want) > 1e-9 {
		t.Errorf("MonthlyUSD(all) = %v, want %v", all, want)
	}
}
