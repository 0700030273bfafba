package stalltest

import (
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)

func at(sec float64) time.Time { return t0.Add(time.Duration(math.Round(sec * float64(time.Second)))) }

// A running probe wakes about once a tick and records only wakes at least
// Floor late.
func TestProbe_MeasuresItsWakes(t *testing.T) {
	p := Start(Config{})
	deadline := time.Now().Add(10 * time.Second)
	for p.Record().Wakes < 20 {
		if time.Now().After(deadline) {
			t.Fatalf("the probe woke %d times in 10 s; want 20 (a 10 ms tick)", p.Record().Wakes)
		}
		time.Sleep(20 * time.Millisecond)
	}
	p.Stop()
	p.Stop() // twice is safe
	r := p.Record()
	for _, w := range r.Late {
		if w.Late() < r.Floor || w.Woke.Before(r.Since) {
			t.Errorf("recorded wake %+v: below the floor %v or before the start", w, r.Floor)
		}
	}
	if !strings.HasPrefix(r.String(), "cpu probe: ") || !strings.Contains(r.String(), "wakes of 10ms") {
		t.Errorf("summary %q", r.String())
	}
	t.Logf("%s", r)
}

// The ring keeps the latest Keep late wakes in order and counts the rest;
// the maximum and total cover every late wake.
func TestProbe_KeepsTheLatestLateWakes(t *testing.T) {
	p := &Probe{cfg: Config{Tick: 10 * time.Millisecond, Floor: time.Millisecond, Keep: 3}}
	for i, late := range []time.Duration{0, 500 * time.Microsecond, 2 * time.Millisecond, 300 * time.Millisecond, 5 * time.Millisecond, 150 * time.Millisecond, 20 * time.Millisecond} {
		due := at(float64(i))
		p.add(due, due.Add(late))
	}
	r := p.Record()
	if r.Wakes != 7 || r.Dropped != 2 || len(r.Late) != 3 {
		t.Fatalf("wakes %d, dropped %d, kept %d; want 7, 2, 3", r.Wakes, r.Dropped, len(r.Late))
	}
	if r.Late[0].Late() != 5*time.Millisecond || r.Late[1].Late() != 150*time.Millisecond || r.Late[2].Late() != 20*time.Millisecond {
		t.Errorf("kept %v, want the latest three in order", r.Late)
	}
	if r.Max.Late() != 300*time.Millisecond || r.Total != 477*time.Millisecond {
		t.Errorf("max %v, total %v; want 300ms, 477ms", r.Max.Late(), r.Total)
	}
}

func TestStallIn_SumsTheLateWakesClippedToTheWindow(t *testing.T) {
	late := []Wake{{at(3), at(4)}, {at(1), at(1.2)}, {at(2), at(2.05)}, {at(3.5), at(4.5)}, {at(1.1), at(1.15)}}
	for _, tc := range []struct {
		from, to float64
		want     time.Duration
	}{
		{0, 10, 1750 * time.Millisecond},    // overlaps count once: [1, 1.2], [2, 2.05], [3, 4.5]
		{1.1, 2.02, 120 * time.Millisecond}, // 100 ms of the first, 20 ms of the second
		{3.5, 3.6, 100 * time.Millisecond},
		{5, 6, 0},
		{2, 1, 0},
	} {

		if got := StallIn(late, at(tc.from), at(tc.to)); got != tc.want {
			t.Errorf("StallIn(%g, %g) = %v, want %v", tc.from, tc.to, got, tc.want)
		}
	}
}

// A bound missed within the measured stall makes the attempt inconclusive
// and Run runs the test again, logging the retry; an attempt in time ends
// it.
func TestRun_RunsAgainAnAttemptTheStallExplains(t *testing.T) {
	log := filepath.Join(t.TempDir(), "retries.log")
	t.Setenv(EnvRetryLog, log)
	n := 0
	Run(t, func(t *testing.T, p *Probe) {
		n++
		from := time.Now().Add(-2 * time.Second)
		if n < 3 {
			p.add(from.Add(500*time.Millisecond), from.Add(800*time.Millisecond)) // 300 ms stalled
			p.Bound(t, "a hand-over", from, 1800*time.Millisecond, from.Add(2*time.Second))
			t.Fatal("Bound returned after an inconclusive miss under Run")
		}
		if !p.Bound(t, "a hand-over", from, time.Second, from.Add(900*time.Millisecond)) {
			t.Fatal("Bound failed a hand-over in time")
		}
	})
	if n != 3 {
		t.Fatalf("%d attempts, want 3", n)
	}
	b, _ := os.ReadFile(log)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], "attempt 1 of 3 inconclusive, measured stall 300ms: a hand-over took 2s, bound 1.8s: 200ms late") {
		t.Errorf("retry log:\n%s", b)
	}
}

// Run's and Bound's failures, in a child process: a miss beyond the stall
// fails at once (no retry); inconclusive three times fails; inconclusive
// outside Run fails.
func TestRun_FailsBeyondTheStallAndWhenItStaysInconclusive(t *testing.T) {
	if mode := os.Getenv("STALLTEST_HELPER"); mode != "" {
		helper(t, mode)
		return
	}
	for _, tc := range []struct{ mode, want string }{
		{"beyond", "beyond the 300ms the machine stalled"},
		{"always", "inconclusive 3 times in a row"},
		{"bare", "within the 300ms the machine stalled meanwhile (CPU probe): inconclusive"},
		{"await-unstalled", "expected the condition within 200ms plus the 0s the machine stalled meanwhile (CPU probe); last seen: not yet"},
		{"await-stalled", "inconclusive 3 times in a row"},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run", "^TestRun_FailsBeyondTheStallAndWhenItStaysInconclusive$", "-test.v")
			cmd.Env = append(os.Environ(), "STALLTEST_HELPER="+tc.mode, EnvRetryLog+"=")
			out, err := cmd.CombinedOutput()
			if err == nil || !strings.Contains(string(out), tc.want) {
				t.Fatalf("mode %s: exit %v, want a failure saying %q:\n%s", tc.mode, err, tc.want, out)
			}
			if tc.mode == "beyond" && strings.Contains(string(out), "attempt2") {
				t.Errorf("a miss beyond the stall was retried:\n%s", out)
			}
		})
	}
}

func helper(t *testing.T, mode string) {
	miss := func(t *testing.T, p *Probe, late time.Duration) {
		from := time.Now().Add(-3 * time.Second)
		p.add(from.Add(500*time.Millisecond), from.Add(800*time.Millisecond))
		p.Bound(t, "a hand-over", from, time.Second, from.Add(time.Second+late))
	}
	switch mode {
	case "beyond":
		Run(t, func(t *testing.T, p *Probe) { miss(t, p, time.Second) })
	case "always":
		Run(t, func(t *testing.T, p *Probe) { miss(t, p, 100*time.Millisecond) })
	case "bare":
		p := StartT(t)
		miss(t, p, 100*time.Millisecond)
	case "await-unstalled":
		p := &Probe{cfg: Default}
		p.Await(t, "the condition", 200*time.Millisecond, func() (bool, string) { return false, "not yet" })
	case "await-stalled":
		Run(t, func(t *testing.T, p *Probe) {
			now := time.Now()
			p.add(now, now.Add(time.Hour)) // stalled from now on
			p.Await(t, "the condition", 200*time.Millisecond, func() (bool, string) { return false, "not yet" })
		})
	}
}

// Await lasts its timeout plus the stall measured since it began: a
// condition that comes 350 ms into a 200 ms wait, in a stall that began
// with it, is awaited (the failing half is in the child process above).
func TestAwait_LastsItsTimeoutPlusTheStall(t *testing.T) {
	p := &Probe{cfg: Default}
	began := time.Now()
	p.add(began, began.Add(400*time.Millisecond))
	p.Await(t, "the condition", 200*time.Millisecond, func() (bool, string) {
		return time.Since(began) >= 350*time.Millisecond, "not yet"
	})
	if took := time.Since(began); took < 350*time.Millisecond {
		t.Fatalf("Await returned after %v, before its condition held", took)
	}
}
