package main

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// Every duration in a log line is Go's duration string ("15s", "1.5s"), in
// JSON as in text: one form for a reader and a query (docs/architecture.md#logs).
func TestLog_DurationsAreWrittenOneWay(t *testing.T) {
	for _, format := range []string{"json", "text"} {
		var buf bytes.Buffer
		newLogger(format, &buf).Info("worker started", "lease", 15*time.Second, "stale", 1500*time.Millisecond)
		if !strings.Contains(buf.String(), "15s") || !strings.Contains(buf.String(), "1.5s") || strings.Contains(buf.String(), "15000000000") {
			t.Errorf("%s: %s; want the durations as 15s and 1.5s", format, buf.String())
		}
	}
}
