package bench

import (
	"strings"
	"testing"
)

const sampleMetrics = `# HELP blobleader_storage_requests_total Storage requests by operation and outcome.
# TYPE blobleader_storage_requests_total counter
blobleader_storage_requests_total{code="201",op="acquire"} 3
blobleader_storage_requests_total{code="409",op="acquire"} 120
blobleader_storage_requests_total{code="200",op="get"} 13
blobleader_storage_requests_total{code="timeout",op="renew"} 1
blobleader_storage_requests_total{code="200",op="renew"} 50
blobleader_storage_requests_total{code="201",op="ledger_append"} 7
blobleader_storage_request_duration_seconds_bucket{op="acquire",le="0.001"} 2
blobleader_is_leader 0
`

func TestParseRequestCounts(t *testing.T) {
	got, err := ParseRequestCounts(strings.NewReader(sampleMetrics))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{"acquire": 123, "get": 13, "renew": 51, "ledger_append": 7}
	if len(got) != len(want) {
		t.Fatalf("ops = %v, want %v", got, want)
	}
	for op, v := range want {
		if got[op] != v {
			t.Errorf("%s = %v, want %v", op, got[op], v)
		}
	}
	el, task := got.Split()
	if el != 187 || task != 7 {
		t.Errorf("Split = %v election, %v task; want 187 and 7", el, task)
	}
}

func TestRequestCounts_Sub(t *testing.T) {
	after := RequestCounts{"acquire": 10, "renew": 5}
	before := RequestCounts{"acquire": 4}
	d := after.Sub(before)
	if d["acquire"] != 6 || d["renew"] != 5 {
		t.Errorf("Sub = %v, want acquire 6, renew 5", d)
	}
}
