package bench

import (
	"bufio"
	"io"
	"strconv"
	"strings"
)

// RequestCounts are blobleader_storage_requests_total values by op, summed
// over codes.
type RequestCounts map[string]float64

// ParseRequestCounts reads Prometheus text (GET /metrics) and sums
// blobleader_storage_requests_total{op,code} by op.
func ParseRequestCounts(r io.Reader) (RequestCounts, error) {
	out := RequestCounts{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	const name = "blobleader_storage_requests_total{"
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, name) {
			continue
		}
		end := strings.LastIndexByte(line, '}')
		if end < 0 {
			continue
		}
		fields := strings.Fields(line[end+1:])
		if len(fields) == 0 {
			continue
		}
		v, err := strconv.ParseFloat(fields[0], 64)
		if err != nil {
			continue
		}
		out[labelValue(line[len(name)-1:end], "op")] += v
	}
	return out, sc.Err()
}

// labelValue extracts name's value from `{a="x",b="y"`.
func labelValue(s, name string) string {
	for _, sep := range []string{"{", ","} {
		if i := strings.Index(s, sep+name+`="`); i >= 0 {
			rest := s[i+len(sep)+len(name)+2:]
			if j := strings.IndexByte(rest, '"'); j >= 0 {
				return rest[:j]
			}
		}
	}
	return ""
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
