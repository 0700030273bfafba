package cluster

import (
	"bufio"
	"io"
	"strconv"
	"strings"
)

// contendOps reads the Prometheus text of GET /metrics and sums
// blobleader_storage_requests_total over the lease operations a contending
// worker keeps making: op labels containing "acquire" or "renew". When no
// such op exists (an unexpected naming), it sums every op, so liveness is
// still measured.
func contendOps(r io.Reader) (float64, bool) {
	var lease, all float64
	var seen, seenLease bool
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "blobleader_storage_requests_total{") {
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
		seen = true
		all += v
		op := strings.ToLower(label(line[:end], "op"))
		if strings.Contains(op, "acquire") || strings.Contains(op, "renew") {
			lease += v
			seenLease = true
		}
	}
	if seenLease {
		return lease, true
	}
	return all, seen
}

// label extracts a label's value from `name{a="x",b="y"`.
func label(s, name string) string {
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
