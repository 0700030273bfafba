package cluster

import (
	"bufio"
	"io"
	"strconv"
	"strings"
)

// RequestsByOp reads the Prometheus text of a worker's GET /metrics and sums
// blobleader_storage_requests_total{op,code} by op (over codes). The bench
// and the liveness sampling both read it.
func RequestsByOp(r io.Reader) (map[string]float64, error) {
	out := map[string]float64{}
	err := EachSample(r, "blobleader_storage_requests_total", func(labels, value string) error {
		if v, err := strconv.ParseFloat(value, 64); err == nil {
			out[Label(labels, "op")] += v
		}
		return nil
	})
	return out, err
}

// EachSample calls f with the labels (`{a="x",b="y"`, without the closing
// brace) and the value text of every labelled sample of metric in the
// Prometheus text r, and stops at f's first error.
func EachSample(r io.Reader, metric string, f func(labels, value string) error) error {
	prefix := metric + "{"
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, prefix) {
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
		if err := f(line[len(metric):end], fields[0]); err != nil {
			return err
		}
	}
	return sc.Err()
}

// contendOps sums the lease operations a contending worker keeps making: ops
// whose name contains "acquire" or "renew", or "poll" (a follower with early
// takeover reads the lease instead of trying to acquire it). When there is no such op (an
// unexpected naming) it sums every op, so liveness is still measured; ok is
// false when the counter is absent altogether.
func contendOps(r io.Reader) (total float64, ok bool) {
	byOp, err := RequestsByOp(r)
	if err != nil || len(byOp) == 0 {
		return 0, false
	}
	var lease, all float64
	seenLease := false
	for op, v := range byOp {
		all += v
		if op := strings.ToLower(op); strings.Contains(op, "acquire") || strings.Contains(op, "renew") || op == "poll" {
			lease += v
			seenLease = true
		}
	}
	if seenLease {
		return lease, true
	}
	return all, true
}

// Label extracts a label's value from labels such as `{a="x",b="y"`; "" when
// it is absent.
func Label(s, name string) string {
	i := strings.Index(s, "{"+name+`="`)
	if i < 0 {
		i = strings.Index(s, ","+name+`="`)
	}
	if i < 0 {
		return ""
	}
	s = s[i+len(name)+3:]
	if j := strings.IndexByte(s, '"'); j >= 0 {
		return s[:j]
	}
	return ""
}
