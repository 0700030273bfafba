package bench

import (
	"io"
	"strings"

	"github.com/blobleader/blobleader/test/cluster"
)

// RequestCounts are blobleader_storage_requests_total values by op, summed
// over codes.
type RequestCounts map[string]float64

// ParseRequestCounts reads Prometheus text (GET /metrics) and sums
// blobleader_storage_requests_total{op,code} by op.
func ParseRequestCounts(r io.Reader) (RequestCounts, error) {
	byOp, err := cluster.RequestsByOp(r)
	return RequestCounts(byOp), err
}

// Sub returns c − before for every op (ops missing before count from 0).
func (c RequestCounts) Sub(before RequestCounts) RequestCounts {
	out := RequestCounts{}
	for op, v := range c {
		out[op] = v - before[op]
	}
	return out
}

// IsElectionOp says whether op is the election's own (lease and lock record)
// rather than the reference task's (ledger_*) or the history sink's
// (history_*).
func IsElectionOp(op string) bool {
	return !strings.HasPrefix(op, "ledger") && !strings.HasPrefix(op, "history")
}

// Split sums the election's ops and everything else.
func (c RequestCounts) Split() (election, task float64) {
	for op, v := range c {
		if IsElectionOp(op) {
			election += v
		} else {
			task += v
		}
	}
	return election, task
}
