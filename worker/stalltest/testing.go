package stalltest

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"
)

// Retries is how many times Run runs a test again after an attempt whose
// timing bound a measured stall explained: three attempts in all.
const Retries = 2

// EnvRetryLog names a file every retry appends one line to. go test shows
// nothing of a passing test, so `make test` sets it and prints the file:
// the CI log names each retry and its stall.
const EnvRetryLog = "BLOBLEADER_RETRY_LOG"

// StartT starts a probe that t's cleanup stops.
func StartT(tb testing.TB) *Probe {
	p := Start(Default)
	tb.Cleanup(p.Stop)
	return p
}

// Bound judges a timing bound in a test: got was due by from + bound. In
// time, it reports true. A miss larger than the stall the probe measured in
// [from, got] fails t, naming that stall. A miss within it is
// inconclusive: under Run the attempt ends (skipped, to be run again);
// otherwise it fails t too — inconclusive is never a pass.
func (p *Probe) Bound(tb testing.TB, what string, from time.Time, bound time.Duration, got time.Time) bool {
	tb.Helper()
	due := from.Add(bound)
	if !got.After(due) {
		return true
	}
	miss, stall := got.Sub(due), p.StallIn(from, got)
	if miss > stall {
		tb.Errorf("%s took %v, bound %v: %v late, beyond the %v the machine stalled meanwhile (%s)",
			what, got.Sub(from).Round(time.Millisecond), bound, miss.Round(time.Millisecond), stall.Round(time.Millisecond), p.measuredBy())
		return false
	}
	return p.Inconclusive(tb, stall, fmt.Sprintf("%s took %v, bound %v: %v late, within the %v the machine stalled meanwhile (%s): inconclusive",
		what, got.Sub(from).Round(time.Millisecond), bound, miss.Round(time.Millisecond), stall.Round(time.Millisecond), p.measuredBy()))
}

// Starved judges a failure that only a process starved of at least need
// in [from, to] could cause (a deadline it was due to extend, lapsed): when
// the probe measured that much stall in the window it is inconclusive, as
// in Bound; otherwise it fails t. It always reports false.
func (p *Probe) Starved(tb testing.TB, what string, from, to time.Time, need time.Duration) bool {
	tb.Helper()
	stall := p.StallIn(from, to)
	if stall < need {
		tb.Errorf("%s; the machine stalled %v in that window (%s), less than the %v that could explain it", what, stall.Round(time.Millisecond), p.measuredBy(), need)
		return false
	}
	return p.Inconclusive(tb, stall, fmt.Sprintf("%s, within the %v the machine stalled meanwhile (%s; %v would explain it): inconclusive", what, stall.Round(time.Millisecond), p.measuredBy(), need))
}

// Inconclusive ends the attempt as inconclusive under Run, and fails tb
// otherwise, for a miss that stall explains (msg says what, for the log):
// Bound and Starved judge with it; a test whose timing is judged elsewhere
// (a child process that measured its own stall) calls it directly. It
// always reports false.
func (p *Probe) Inconclusive(tb testing.TB, stall time.Duration, msg string) bool {
	tb.Helper()
	p.mu.Lock()
	under := p.underRun
	if under {
		p.inconclusive, p.stall = msg, stall
	}
	p.mu.Unlock()
	if !under {
		tb.Errorf("%s", msg)
		return false
	}
	tb.Skip(msg)
	return false
}

// measuredBy names what p measures, for a message.
func (p *Probe) measuredBy() string {
	if p.cfg.Server != "" {
		return "CPU and storage probes"
	}
	return "CPU probe"
}

// Run runs body as subtest attempt1 with a fresh probe; while an attempt
// ends inconclusive (a Bound missed within the measured stall) it runs the
// next, up to 1+Retries attempts, logging each retry (and appending it to
// $BLOBLEADER_RETRY_LOG), and fails t if the last is inconclusive too.
func Run(t *testing.T, body func(t *testing.T, p *Probe)) {
	t.Helper()
	RunWith(t, Default, body)
}

// RunWith is Run with each attempt's probe started with cfg (a Server to
// probe as well, for a test whose bounds wait on storage).
func RunWith(t *testing.T, cfg Config, body func(t *testing.T, p *Probe)) {
	t.Helper()
	for n := 1; n <= 1+Retries; n++ {
		p := Start(cfg)
		p.underRun = true
		t.Run(fmt.Sprintf("attempt%d", n), func(t *testing.T) {
			defer p.Stop()
			body(t, p)
		})
		p.Stop()
		if t.Failed() || p.inconclusive == "" {
			return
		}
		if n == 1+Retries {
			line := fmt.Sprintf("%s: inconclusive %d times in a row, the last with a measured stall of %v: %s; FAIL", t.Name(), n, p.stall.Round(time.Millisecond), p.inconclusive)
			LogRetry(t, line)
			t.Error(line)
			return
		}
		line := fmt.Sprintf("%s: attempt %d of %d inconclusive, measured stall %v: %s; retrying", t.Name(), n, 1+Retries, p.stall.Round(time.Millisecond), p.inconclusive)
		LogRetry(t, line)
		t.Log(line)
	}
}

var retryLog sync.Mutex

// LogRetry appends line, timestamped, to $BLOBLEADER_RETRY_LOG when set.
func LogRetry(tb testing.TB, line string) {
	path := os.Getenv(EnvRetryLog)
	if path == "" {
		return
	}
	retryLog.Lock()
	defer retryLog.Unlock()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err == nil {
		_, err = fmt.Fprintln(f, time.Now().UTC().Format("15:04:05")+" "+line)
		err = errors.Join(err, f.Close())
	}
	if err != nil {
		tb.Logf("%s: %v", EnvRetryLog, err)
	}
}

// MaxStretch bounds Await: a wait lasts at most MaxStretch times its
// timeout, however long the stall.
const MaxStretch = 3

// Await polls cond, at once and then every 50 ms, until it reports true.
// It is a wait, not a bound: it lasts timeout plus the stall p measured
// since it began, at most MaxStretch × timeout, so a starved machine is not
// mistaken for a system that never got there. Running out, it fails tb
// with what and cond's last word; when the stall is what ran it out (it
// reached the cap), the wait is inconclusive (Inconclusive: retried under
// Run, a failure otherwise) — never a pass. It returns only when cond held.
func (p *Probe) Await(tb testing.TB, what string, timeout time.Duration, cond func() (bool, string)) {
	tb.Helper()
	began := time.Now()
	limit := func(now time.Time) time.Duration {
		return timeout + min(p.StallIn(began, now), (MaxStretch-1)*timeout)
	}
	var last string
	for {
		var ok bool
		if ok, last = cond(); ok {
			return
		}
		if now := time.Now(); now.Sub(began) > limit(now) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	stall := p.StallIn(began, time.Now())
	msg := fmt.Sprintf("expected %s within %v plus the %v the machine stalled meanwhile (%s); last seen: %s",
		what, timeout, stall.Round(time.Millisecond), p.measuredBy(), last)
	if stall >= (MaxStretch-1)*timeout {
		p.Inconclusive(tb, stall, msg+": the stall outlasted the wait's limit ("+(MaxStretch*timeout).String()+"): inconclusive")
		tb.FailNow()
	}
	tb.Fatal(msg)
}

// Await is Probe.Await on a probe started with cfg for the length of this
// one wait (the zero Config probes the CPU alone; set Server to probe
// storage too).
func Await(tb testing.TB, cfg Config, what string, timeout time.Duration, cond func() (bool, string)) {
	tb.Helper()
	p := Start(cfg)
	defer p.Stop()
	p.Await(tb, what, timeout, cond)
}
