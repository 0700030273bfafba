package election

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/blobleader/blobleader/worker/election/electiontest"
	"github.com/blobleader/blobleader/worker/election/lease"
)

// These tests run inside testing/synctest bubbles: time.Now, timers and the
// the electiontest.Store's lease expiry all read the bubble's virtual clock, which moves
// only when every goroutine in the bubble is blocked. That is the injected
// clock: deadlines are asserted exactly, and no test waits in real time.

var errTransient = errors.New("503 ServerBusy (injected)")

// recorder collects one elector's events.
type recorder struct {
	mu     sync.Mutex
	events []Event
}

func (r *recorder) add(ev Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, ev)
}

func (r *recorder) all(kind EventKind) []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Event
	for _, ev := range r.events {
		if ev.Kind == kind {
			out = append(out, ev)
		}
	}
	return out
}

// contender is one elector in a test, with its lock, events and Run result.
type contender struct {
	e      *Elector
	lock   *electiontest.Lock
	rec    *recorder
	cancel context.CancelFunc
	exited chan struct{} // closed when Run has returned
	runErr error         // Run's result, valid after exited is closed
}

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func testConfig(id string) Config {
	c := DefaultConfig(id)
	c.Logger = quietLogger()
	return c
}

// start runs an elector on store until the test ends. Call inside a bubble.
func start(t *testing.T, store *electiontest.Store, cfg Config, cb Callbacks) *contender {
	t.Helper()
	l := store.NewLock(cfg.Identity)
	return startOn(t, cfg, l, l, cb)
}

// startOn is start with the elector on lock, a wrapper of mem.
func startOn(t *testing.T, cfg Config, lock lease.Lock, mem *electiontest.Lock, cb Callbacks) *contender {
	t.Helper()
	c := &contender{lock: mem, rec: &recorder{}, exited: make(chan struct{})}
	user := cb.OnEvent
	cb.OnEvent = func(ev Event) {
		c.rec.add(ev)
		if user != nil {
			user(ev)
		}
	}
	e, err := NewElector(cfg, lock, cb)
	if err != nil {
		t.Fatalf("NewElector(%s): %v", cfg.Identity, err)
	}
	c.e = e
	ctx, cancel := context.WithCancel(context.Background())
	c.cancel = cancel
	go func() { c.runErr = e.Run(ctx); close(c.exited) }()
	t.Cleanup(func() { cancel(); <-c.exited })
	return c
}

// leaders returns the contenders that claim leadership now.
func leaders(cs ...*contender) []*contender {
	var out []*contender
	for _, c := range cs {
		if c.e.IsLeader() {
			out = append(out, c)
		}
	}
	return out
}

// oneLeader fails unless exactly one contender leads.
func oneLeader(t *testing.T, cs ...*contender) *contender {
	t.Helper()
	ls := leaders(cs...)
	if len(ls) != 1 {
		t.Fatalf("expected exactly one leader, found %d at %s", len(ls), time.Now().Format(time.StampMilli))
	}
	return ls[0]
}

// hang makes op block until its context ends, like a request to a storage
// account that stopped answering.
func hang(ops ...string) func(context.Context, string) error {
	return func(ctx context.Context, op string) error {
		if slices.Contains(ops, op) {
			<-ctx.Done()
			return ctx.Err()
		}
		return nil
	}
}

func fail(err error, ops ...string) func(context.Context, string) error {
	return func(ctx context.Context, op string) error {
		if len(ops) == 0 || slices.Contains(ops, op) {
			return err
		}
		return nil
	}
}

func TestElector_SingleContenderLeadsAtOnceWithTermOne(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := electiontest.NewStore()
		t0 := time.Now()
		a := start(t, store, testConfig("a"), Callbacks{})
		synctest.Wait()
		oneLeader(t, a)
		st := a.e.Status()
		if st.Role != RoleLeader || st.Term != 1 || st.Leader != "a" {
			t.Fatalf("status = %+v, want leader a, term 1", st)
		}
		if want := t0.Add(10 * time.Second); !st.ValidUntil.Equal(want) {
			t.Fatalf("valid until %s, want acquire send time + D = %s", st.ValidUntil, want)
		}
		if rec := store.Record(); rec.Holder != "a" || rec.Term != 1 {
			t.Fatalf("stored record = %+v, want holder a, term 1", rec)
		}
	})
}

func TestElector_ExactlyOneOfThreeLeads(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := electiontest.NewStore()
		cs := []*contender{
			start(t, store, testConfig("a"), Callbacks{}),
			start(t, store, testConfig("b"), Callbacks{}),
			start(t, store, testConfig("c"), Callbacks{}),
		}
		// Sample over a minute of virtual time: always exactly one leader.
		for range 60 {
			time.Sleep(time.Second)
			synctest.Wait()
			oneLeader(t, cs...)
		}
	})
}

func TestElector_StepsDownAtDeadlineWhileRenewsHang(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := electiontest.NewStore()
		t0 := time.Now()
		stopped := make(chan string, 1)
		a := start(t, store, testConfig("a"), Callbacks{OnStoppedLeading: func(r string) { stopped <- r }})
		synctest.Wait()
		oneLeader(t, a)
		a.lock.SetFault(hang("renew", "release"))

		deadline := t0.Add(10 * time.Second) // acquire sent at t0, D = 10s
		time.Sleep(time.Until(deadline) - time.Nanosecond)
		synctest.Wait()
		if !a.e.IsLeader() {
			t.Fatalf("stepped down before the deadline (at %s)", time.Since(t0))
		}
		time.Sleep(time.Nanosecond)
		if a.e.IsLeader() {
			t.Fatal("IsLeader() is still true at the deadline, with every renew hanging")
		}
		synctest.Wait()
		select {
		case r := <-stopped:
			if r != "renew deadline exceeded" {
				t.Fatalf("OnStoppedLeading(%q), want renew deadline exceeded", r)
			}
		default:
			t.Fatal("OnStoppedLeading was not called at the deadline")
		}
		ev := a.rec.all(EventStoppedLeading)
		if len(ev) != 1 || !ev[0].Time.Equal(deadline) || !ev[0].ValidUntil.Equal(deadline) {
			t.Fatalf("stopped_leading events = %+v, want one at exactly %s", ev, deadline)
		}
		if n := len(a.rec.all(EventRenewFailed)); n < 3 {
			t.Fatalf("%d renew_failed events before the deadline, want ≥ 3 (one per hung attempt)", n)
		}
	})
}

func TestElector_DeadlineCountsFromSendTimeOfLastSuccessfulRenew(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := electiontest.NewStore()
		a := start(t, store, testConfig("a"), Callbacks{})
		synctest.Wait()
		// Renews succeed but each answer takes 1.5s: the deadline must count
		// from when the renew was sent, not when its answer came back.
		a.lock.SetFault(func(ctx context.Context, op string) error {
			if op == "renew" {
				time.Sleep(1500 * time.Millisecond)
			}
			return nil
		})
		time.Sleep(4*time.Second + time.Millisecond) // renews sent at 2s and 4s; the 2s one answered at 3.5s
		synctest.Wait()
		renewed := a.rec.all(EventRenewed)
		if len(renewed) == 0 {
			t.Fatal("no successful renew recorded")
		}
		last := renewed[len(renewed)-1]
		sent := last.Time.Add(-1500 * time.Millisecond)
		if want := sent.Add(10 * time.Second); !last.ValidUntil.Equal(want) {
			t.Fatalf("renew answered at %s has valid_until %s, want send time + D = %s", last.Time, last.ValidUntil, want)
		}
	})
}

func TestElector_StepsDownImmediatelyOnDefiniteLoss(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := electiontest.NewStore()
		a := start(t, store, testConfig("a"), Callbacks{})
		synctest.Wait()
		oneLeader(t, a)
		time.Sleep(500 * time.Millisecond)
		a.lock.SetFault(fail(fmt.Errorf("LeaseIdMismatchWithLeaseOperation: %w", lease.ErrLost), "renew"))
		t1 := time.Now()
		time.Sleep(1600 * time.Millisecond) // the next renew is due 2s after acquiring
		synctest.Wait()
		ev := a.rec.all(EventStoppedLeading)
		if len(ev) != 1 || !strings.HasPrefix(ev[0].Reason, "lease lost") {
			t.Fatalf("stopped_leading = %+v, want one with reason \"lease lost…\"", ev)
		}
		if at := ev[0].Time.Sub(t1); at > 1500*time.Millisecond {
			t.Fatalf("stepped down %s after the loss was injected, want at the next renew (1.5s)", at)
		}
		if n := a.lock.Calls("release"); n != 0 {
			t.Fatalf("release called %d times after a definite loss, want 0 (nothing to release)", n)
		}
	})
}

func TestElector_TransientErrorsNeverEndRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := electiontest.NewStore()
		a := start(t, store, testConfig("a"), Callbacks{})
		b := start(t, store, testConfig("b"), Callbacks{})
		synctest.Wait()
		oneLeader(t, a, b)
		// Five minutes of a storage outage: every call fails or hangs.
		a.lock.SetFault(fail(errTransient))
		b.lock.SetFault(hang("acquire", "renew", "get", "update", "release"))
		time.Sleep(5 * time.Minute)
		synctest.Wait()
		for _, c := range []*contender{a, b} {
			select {
			case <-c.exited:
				t.Fatalf("Run of %s returned (%v) during a transient outage", c.e.cfg.Identity, c.runErr)
			default:
			}
		}
		if len(leaders(a, b)) != 0 {
			t.Fatal("someone claims leadership through a five-minute outage")
		}
		if len(a.rec.all(EventAcquireFailed)) == 0 {
			t.Fatal("no acquire_failed events recorded during the outage")
		}
		// Storage comes back: a leader again within the bounds (lease may
		// still be held for up to L by nobody; here it long expired).
		a.lock.SetFault(nil)
		b.lock.SetFault(nil)
		healed := time.Now()
		for leaders(a, b) == nil {
			if time.Since(healed) > 1100*time.Millisecond+2*time.Second {
				t.Fatalf("no leader %s after the outage ended", time.Since(healed))
			}
			time.Sleep(10 * time.Millisecond)
		}
		oneLeader(t, a, b)
	})
}

func TestElector_ReleasesOnCancelAndFollowerTakesOverWithinOnePoll(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := electiontest.NewStore()
		a := start(t, store, testConfig("a"), Callbacks{})
		synctest.Wait()
		b := start(t, store, testConfig("b"), Callbacks{})
		time.Sleep(5 * time.Second)
		synctest.Wait()
		if oneLeader(t, a, b) != a {
			t.Fatal("a should lead: it started first")
		}
		a.cancel()
		synctest.Wait()
		<-a.exited
		if a.runErr != nil {
			t.Fatalf("Run returned %v after cancel, want nil", a.runErr)
		}
		released := a.rec.all(EventReleased)
		stopped := a.rec.all(EventStoppedLeading)
		if len(released) != 1 || len(stopped) != 1 || stopped[0].Reason != "shutdown" {
			t.Fatalf("events on cancel: stopped=%+v released=%+v, want one shutdown stop and one release", stopped, released)
		}
		if a.e.Status().Role != RoleStopping {
			t.Fatalf("role after graceful stop = %s, want stopping", a.e.Status().Role)
		}
		r := released[0].Time
		time.Sleep(1100 * time.Millisecond) // one jittered retry period, P·1.1
		synctest.Wait()
		if !b.e.IsLeader() {
			t.Fatalf("b does not lead %s after a's release", time.Since(r))
		}
		if st := b.rec.all(EventStartedLeading); len(st) != 1 || st[0].Term != 2 {
			t.Fatalf("b started_leading = %+v, want term 2", st)
		}
	})
}

func TestElector_WatchdogStepsDownAStalledTaskAndReleases(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := electiontest.NewStore()
		cfg := testConfig("a")
		cfg.WatchdogTimeout = 5 * time.Second
		t0 := time.Now()
		a := start(t, store, cfg, Callbacks{OnStartedLeading: func(ctx context.Context, term int64) error {
			// Makes progress for 3s, then stalls (but still honours cancel).
			for range 3 {
				Progress(ctx)
				time.Sleep(time.Second)
			}
			<-ctx.Done()
			return nil
		}})
		synctest.Wait()
		oneLeader(t, a)
		b := start(t, store, testConfig("b"), Callbacks{})
		time.Sleep(20 * time.Second)
		synctest.Wait()
		ev := a.rec.all(EventStoppedLeading)
		if len(ev) == 0 || !strings.HasPrefix(ev[0].Reason, "watchdog") {
			t.Fatalf("a stopped_leading = %+v, want a watchdog step-down", ev)
		}
		// Last heartbeat at 2s; the watchdog is checked every renew interval.
		if at := ev[0].Time.Sub(t0); at < 7*time.Second || at > 7*time.Second+cfg.RenewInterval {
			t.Fatalf("watchdog fired at %s, want within (7s, 9s]", at)
		}
		if len(a.rec.all(EventReleased)) == 0 {
			t.Fatal("the watchdog step-down did not release the lease")
		}
		if b.rec.all(EventStartedLeading) == nil {
			t.Fatal("b never took over from the stalled leader")
		}
		if err := a.e.Healthy(); err != nil {
			t.Fatalf("Healthy() = %v after the stalled task returned on cancel, want nil", err)
		}
	})
}

func TestElector_TaskIgnoringCancelMakesHealthFail(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := electiontest.NewStore()
		cfg := testConfig("a")
		cfg.WatchdogTimeout = 4 * time.Second
		release := make(chan struct{})
		a := start(t, store, cfg, Callbacks{OnStartedLeading: func(ctx context.Context, term int64) error {
			<-release // wedged: never heartbeats, ignores ctx
			return nil
		}})
		time.Sleep(15 * time.Second)
		synctest.Wait()
		if err := a.e.Healthy(); err == nil {
			t.Fatal("Healthy() = nil while a cancelled leader task is still running")
		}
		close(release)
		synctest.Wait()
		if err := a.e.Healthy(); err != nil {
			t.Fatalf("Healthy() = %v after the task returned, want nil", err)
		}
	})
}

func TestElector_TaskExitHandsLeadershipOn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := electiontest.NewStore()
		a := start(t, store, testConfig("a"), Callbacks{OnStartedLeading: func(ctx context.Context, term int64) error {
			if term == 1 {
				return errors.New("ledger fenced")
			}
			<-ctx.Done()
			return nil
		}})
		synctest.Wait()
		ev := a.rec.all(EventStoppedLeading)
		if len(ev) != 1 || ev[0].Reason != "task exited: ledger fenced" {
			t.Fatalf("stopped_leading = %+v, want reason \"task exited: ledger fenced\"", ev)
		}
		time.Sleep(2200*time.Millisecond + time.Millisecond) // the hand-off pause, 2·P·1.1
		synctest.Wait()
		if st := a.rec.all(EventStartedLeading); len(st) != 2 || st[1].Term != 2 {
			t.Fatalf("started_leading = %+v, want a second leadership with term 2", st)
		}
	})
}

func TestElector_BrokenLeaseLeaderContendsAgain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := electiontest.NewStore()
		a := start(t, store, testConfig("a"), Callbacks{})
		synctest.Wait()
		oneLeader(t, a)
		for round := range 5 {
			time.Sleep(3 * time.Second)
			store.Break() // an operator's BreakLease(0)
			// It learns at its next renew (≤ 2 s), pauses 2·P·1.1 like after a
			// hand-off, then wins the free lease at its first poll.
			time.Sleep(2*time.Second + 2200*time.Millisecond + time.Millisecond)
			synctest.Wait()
			if !a.e.IsLeader() {
				t.Fatalf("round %d: the sole contender did not lead again after its lease was broken", round)
			}
		}
		starts := a.rec.all(EventStartedLeading)
		if len(starts) != 6 {
			t.Fatalf("%d leaderships, want 6 (the first plus one after each of 5 breaks)", len(starts))
		}
	})
}

// TestElector_SafetyUnderRandomFaults drives several contenders through a
// seeded random schedule of partitions, hangs and breaks and checks, from the
// events, that leadership intervals never overlap (outside the forced-break
// window), terms strictly increase, and a leader exists again after faults.
func TestElector_SafetyUnderRandomFaults(t *testing.T) {
	for seed := range uint64(4) {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rng := rand.New(rand.NewPCG(seed, 42))
				store := electiontest.NewStore()
				cs := []*contender{
					start(t, store, testConfig("a"), Callbacks{}),
					start(t, store, testConfig("b"), Callbacks{}),
					start(t, store, testConfig("c"), Callbacks{}),
				}
				var breaks []time.Time
				for range 30 {
					victim := cs[rng.IntN(len(cs))]
					switch rng.IntN(4) {
					case 0:
						victim.lock.SetFault(fail(errTransient))
					case 1:
						victim.lock.SetFault(hang("renew", "acquire", "release", "get", "update"))
					case 2:
						store.Break()
						breaks = append(breaks, time.Now())
					case 3:
					}
					time.Sleep(time.Duration(rng.IntN(30_000)) * time.Millisecond)
					victim.lock.SetFault(nil)
					// L + P·1.1 + one request: a leader must exist again.
					time.Sleep(15*time.Second + 1100*time.Millisecond + 2*time.Second)
					synctest.Wait()
					oneLeader(t, cs...)
				}
				checkIntervals(t, breaks, cs...)
			})
		})
	}
}

type interval struct {
	who        string
	term       int64
	start, end time.Time
}

func checkIntervals(t *testing.T, breaks []time.Time, cs ...*contender) {
	t.Helper()
	var ivs []interval
	for _, c := range cs {
		var open *interval
		c.rec.mu.Lock()
		for _, ev := range c.rec.events {
			switch ev.Kind {
			case EventStartedLeading:
				open = &interval{who: c.e.cfg.Identity, term: ev.Term, start: ev.Time}
			case EventStoppedLeading:
				if open != nil {
					open.end = ev.Time
					if ev.ValidUntil.Before(open.end) {
						open.end = ev.ValidUntil
					}
					ivs = append(ivs, *open)
					open = nil
				}
			}
		}
		c.rec.mu.Unlock()
		if open != nil {
			open.end = time.Now()
			ivs = append(ivs, *open)
		}
	}
	slices.SortFunc(ivs, func(a, b interval) int { return a.start.Compare(b.start) })
	for i := 1; i < len(ivs); i++ {
		prev, cur := ivs[i-1], ivs[i]
		if cur.term <= prev.term {
			t.Errorf("terms not increasing: %s term %d started after %s term %d", cur.who, cur.term, prev.who, prev.term)
		}
		if cur.start.Before(prev.end) {
			// Allowed only after a forced break, and only for a renew interval
			// plus a request timeout.
			forced := false
			for _, b := range breaks {
				if !b.After(cur.start) && !b.Before(prev.start) && !prev.end.After(b.Add(4*time.Second)) {
					forced = true
				}
			}
			if !forced {
				t.Errorf("S1 violated: %s term %d [%s, %s] overlaps %s term %d from %s",
					prev.who, prev.term, prev.start.Format(time.StampMilli), prev.end.Format(time.StampMilli),
					cur.who, cur.term, cur.start.Format(time.StampMilli))
			}
		}
	}
	if len(ivs) < 2 {
		t.Fatalf("only %d leaderships in a schedule of 30 faults: the test exercised nothing", len(ivs))
	}
}

func TestElector_RunTwiceIsRefused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := start(t, electiontest.NewStore(), testConfig("a"), Callbacks{})
		synctest.Wait()
		if err := a.e.Run(context.Background()); !errors.Is(err, ErrAlreadyRunning) {
			t.Fatalf("second Run = %v, want ErrAlreadyRunning", err)
		}
	})
}

// After a lost lease a deposed holder pauses before contending
// again, as after a hand-off, instead of racing to win back a lease an
// operator just broke.
func TestElector_PausesBeforeContendingAfterALostLease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := electiontest.NewStore()
		a := start(t, store, testConfig("a"), Callbacks{})
		synctest.Wait()
		oneLeader(t, a)
		var mu sync.Mutex
		var acquires []time.Time
		a.lock.SetFault(func(ctx context.Context, op string) error {
			if op == "acquire" {
				mu.Lock()
				acquires = append(acquires, time.Now())
				mu.Unlock()
			}
			return nil
		})
		time.Sleep(500 * time.Millisecond)
		store.Break()
		time.Sleep(5 * time.Second)
		synctest.Wait()
		stopped := a.rec.all(EventStoppedLeading)
		if len(stopped) != 1 {
			t.Fatalf("stopped_leading = %+v, want one after the break", stopped)
		}
		mu.Lock()
		defer mu.Unlock()
		for _, at := range acquires {
			if d := at.Sub(stopped[0].Time); d >= 0 && d < 1800*time.Millisecond {
				t.Fatalf("a tried to acquire %s after losing its lease, want a pause of at least 2·P·0.9 = 1.8s", d)
			}
		}
	})
}
