package main

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/blobleader/blobleader/worker/azuritetest"
)

// A command that exits at once (a crash at start, a bad configuration)
// must not be restarted for ever at the hand-off pause: each leadership
// that ended before the command ran for a look counts as one without
// progress, so the elector backs off (2·P·2^k), and says so: a
// `child_backoff` WARN line with the count in a row, the stopped_leading
// reason, blobleader_no_progress_stepdowns_total, and /readyz 503 while
// it backs off; /healthz stays 200 (a restart would forget the backoff).
func TestRun_ACrashLoopingCommandBacksOffAndSaysSo(t *testing.T) {
	t.Parallel()
	az := azuritetest.StartT(t)
	const window = 12 * time.Second
	s, out := startLoggedSupervisor(t, az.ConnectionString(), "run-crashloop", "loop",
		[]string{"--retry-period", "500ms", "--renew-interval", "500ms"}, "false")
	base := s.url(t)
	began := time.Now()
	sawBackingOff := false
	for time.Since(began) < window {
		if code, body := getURL(base + "/readyz"); code == 503 && strings.Contains(body, "backing off") {
			if hc, hb := get(t, base+"/healthz"); hc != 200 {
				t.Errorf("/healthz %d %q while backing off, want 200", hc, hb)
			}
			sawBackingOff = true
		}
		time.Sleep(100 * time.Millisecond)
	}
	starts := 0
	for _, r := range readRecords(t, s.history) {
		if r.Event == "child_started" {
			starts++
		}
	}
	// Without the backoff: one start per hand-off pause (2·P = 1 s) and
	// leadership, about 10 in the window; with it, starts at 0, ~2, ~6 s, … .
	if starts > 5 || starts < 2 {
		t.Errorf("%d starts of a command that exits at once in %v, want 2-5 (a backoff of 2·P·2^k)", starts, window)
	}
	if !sawBackingOff {
		t.Error("/readyz never said it backs off")
	}
	log := out.String()
	if !strings.Contains(log, "event=child_backoff") || !strings.Contains(log, "quick_exits=2") {
		t.Errorf("no child_backoff line counting 2 quick exits in a row:\n%s", log)
	}
	stopped := awaitEvent(t, s.history, time.Second, "a stopped_leading", func(r record) bool { return r.Event == "stopped_leading" })
	if !strings.Contains(stopped.Reason, "no progress") {
		t.Errorf("stopped_leading reason %q does not say no progress", stopped.Reason)
	}
	if _, body := get(t, base+"/metrics"); !strings.Contains(body, "blobleader_no_progress_stepdowns_total ") || strings.Contains(body, "blobleader_no_progress_stepdowns_total 0\n") {
		t.Errorf("/metrics does not count the leaderships without progress")
	}
	t.Logf("%d starts in %v", starts, window)
}

// getURL GETs url: the status and body, 0 while nothing listens yet.
func getURL(url string) (int, string) {
	resp, err := http.Get(url)
	if err != nil {
		return 0, ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}
