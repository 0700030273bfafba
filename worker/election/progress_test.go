package election

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/blobleader/blobleader/worker/election/electiontest"
)

// Health is progress (docs/architecture.md#the-election): the watchdog
// counts work the task reports done, and an elector whose leaderships make
// none backs off before contending again, so a poisoned resource does not
// keep the fleet flapping.

// gaps returns, per leadership that ended, how long after its
// stopped_leading the next one started.
func gaps(t *testing.T, r *recorder) []time.Duration {
	t.Helper()
	starts, stops := r.all(EventStartedLeading), r.all(EventStoppedLeading)
	var out []time.Duration
	for i, st := range stops {
		if i+1 >= len(starts) {
			break
		}
		out = append(out, starts[i+1].Time.Sub(st.Time))
	}
	return out
}

// within fails unless got is want ±10 % (the retry period's jitter).
func within(t *testing.T, what string, got, want time.Duration) {
	t.Helper()
	if got < want*9/10 || got > want*11/10+time.Millisecond {
		t.Errorf("%s = %v, want %v ±10%%", what, got, want)
	}
}

func TestElector_NoProgressBacksOffExponentiallyUpToFourLeases(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := testConfig("a")
		cfg.WatchdogTimeout = 5 * time.Second
		a := start(t, electiontest.NewStore(), cfg, Callbacks{OnStartedLeading: func(ctx context.Context, term int64) error {
			<-ctx.Done() // never makes progress
			return nil
		}})
		time.Sleep(10 * time.Minute)
		synctest.Wait()
		for _, ev := range a.rec.all(EventStoppedLeading) {
			if !strings.HasPrefix(ev.Reason, "watchdog: no progress") {
				t.Fatalf("stopped_leading reason %q, want the watchdog's no progress", ev.Reason)
			}
		}
		gs := gaps(t, a.rec)
		if len(gs) < 7 {
			t.Fatalf("only %d leaderships ended in 10 minutes: %v", len(gs), gs)
		}
		p, cap := cfg.RetryPeriod, 4*cfg.LeaseDuration
		for k, g := range gs[:7] {
			want := min(2*p<<(k+1), cap)
			within(t, "the pause after leadership "+string(rune('1'+k))+" without progress", g, want)
		}
		if got := a.e.NoProgressStepDowns(); got != int64(len(a.rec.all(EventStoppedLeading))) {
			t.Errorf("NoProgressStepDowns() = %d, want %d", got, len(a.rec.all(EventStoppedLeading)))
		}
	})
}

func TestElector_ProgressResetsTheBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := testConfig("a")
		cfg.WatchdogTimeout = 5 * time.Second
		var n atomic.Int32
		a := start(t, electiontest.NewStore(), cfg, Callbacks{OnStartedLeading: func(ctx context.Context, term int64) error {
			if n.Add(1) == 3 {
				Progress(ctx) // the third leadership gets some work done, then stalls
			}
			<-ctx.Done()
			return nil
		}})
		time.Sleep(2 * time.Minute)
		synctest.Wait()
		gs := gaps(t, a.rec)
		if len(gs) < 4 {
			t.Fatalf("only %d leaderships ended: %v", len(gs), gs)
		}
		p := cfg.RetryPeriod
		within(t, "the pause after the 1st leadership without progress", gs[0], 4*p)
		within(t, "the pause after the 2nd", gs[1], 8*p)
		within(t, "the pause after a leadership that made progress", gs[2], 2*p)
		within(t, "the pause after the next without progress", gs[3], 4*p)
	})
}

func TestElector_NoProgressIsReportedNotRestarted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := testConfig("a")
		cfg.WatchdogTimeout = 5 * time.Second
		a := start(t, electiontest.NewStore(), cfg, Callbacks{OnStartedLeading: func(ctx context.Context, term int64) error {
			<-ctx.Done()
			return nil
		}})
		synctest.Wait()
		oneLeader(t, a)
		// Past the watchdog timeout, before the renew tick that acts on it.
		time.Sleep(5*time.Second + 500*time.Millisecond)
		synctest.Wait()
		if err := a.e.Healthy(); err == nil || !strings.Contains(err.Error(), "no progress") {
			t.Errorf("Healthy() = %v while leading without progress for the watchdog timeout, want it said", err)
		}
		// Stepped down; backing off. Six leaderships without progress make
		// the pause 4·L = 60 s, longer than the loop's own L: the pause must
		// not read as a stuck loop (a liveness probe would restart the worker
		// and forget the backoff).
		for a.e.NoProgressStepDowns() < 6 {
			time.Sleep(time.Second)
			synctest.Wait()
		}
		time.Sleep(cfg.LeaseDuration + 5*time.Second)
		synctest.Wait()
		if a.e.IsLeader() {
			t.Fatal("leading again within L + 5 s of the sixth step-down without progress")
		}
		if err := a.e.Healthy(); err != nil {
			t.Errorf("Healthy() = %v while backing off, want nil (a restart forgets the backoff)", err)
		}
		if err := a.e.Ready(); err == nil || !strings.Contains(err.Error(), "backing off") {
			t.Errorf("Ready() = %v while backing off, want it said", err)
		}
	})
}

// A task that ends by itself without any work done (it returns an error
// wrapping ErrNoProgress: `blobleader run`'s command that exits at once)
// backs off as a stalled one does, and says so; a task that returns any
// other error hands on with the plain pause.
func TestElector_ATaskEndingWithoutProgressBacksOff(t *testing.T) {
	for _, tc := range []struct {
		name    string
		err     error
		backoff bool
	}{
		{"no progress", fmt.Errorf("command exit code 1 at once: %w", ErrNoProgress), true},
		{"other error", errors.New("command exit code 1"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cfg := testConfig("a")
				a := start(t, electiontest.NewStore(), cfg, Callbacks{OnStartedLeading: func(ctx context.Context, term int64) error {
					return tc.err
				}})
				time.Sleep(time.Minute)
				synctest.Wait()
				gs := gaps(t, a.rec)
				if len(gs) < 3 {
					t.Fatalf("only %d leaderships ended in a minute: %v", len(gs), gs)
				}
				p := cfg.RetryPeriod
				for k, g := range gs[:3] {
					want := 2 * p
					if tc.backoff {
						want = 2 * p << (k + 1)
					}
					within(t, fmt.Sprintf("the pause after leadership %d", k+1), g, want)
				}
				if ev := a.rec.all(EventStoppedLeading)[0]; !strings.Contains(ev.Reason, "task exited: "+tc.err.Error()) {
					t.Errorf("stopped_leading reason %q, want the task's error", ev.Reason)
				}
				if got := a.e.NoProgressStepDowns() > 0; got != tc.backoff {
					t.Errorf("NoProgressStepDowns() = %d: counted = %v, want %v", a.e.NoProgressStepDowns(), got, tc.backoff)
				}
			})
		})
	}
}
