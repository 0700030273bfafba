package election

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/blobleader/blobleader/worker/election/electiontest"
	"github.com/blobleader/blobleader/worker/election/lease"
)

// fastConfig is the fast profile of README's timing table: D 2 s, renew
// 0.5 s, P 0.5 s, T 2 s, B 4 s (the shortest the rule allows).
func fastConfig(id string) Config {
	c := testConfig(id)
	c.RenewDeadline, c.RenewInterval, c.RetryPeriod = 2*time.Second, 500*time.Millisecond, 500*time.Millisecond
	c.TakeoverAfter, c.BreakPeriod = 2*time.Second, 4*time.Second
	return c
}

func withoutTakeover(c Config) Config {
	c.TakeoverAfter, c.BreakPeriod = 0, 0
	return c
}

// dead makes every storage call of c hang, as if its host were gone: it
// sends nothing that arrives, releases nothing. (Its elector still steps
// down at its deadline; it cannot tell anyone.)
func dead(c *contender) {
	c.lock.SetFault(hang("renew", "acquire", "release", "get", "update", "inspect", "break"))
}

func lastBeat(t *testing.T, c *contender) Event {
	t.Helper()
	var last Event
	for _, ev := range c.rec.all(EventRenewed) {
		if ev.Heartbeat > 0 {
			last = ev
		}
	}
	if last.Heartbeat == 0 {
		t.Fatalf("%s wrote no heartbeat while leading", c.e.cfg.Identity)
	}
	return last
}

func startedAfter(cs []*contender, t0 time.Time) (who string, at time.Time) {
	for _, c := range cs {
		for _, ev := range c.rec.all(EventStartedLeading) {
			if ev.Time.After(t0) && (at.IsZero() || ev.Time.Before(at)) {
				who, at = c.e.cfg.Identity, ev.Time
			}
		}
	}
	return who, at
}

// The takeover after a dead host: T + B and a few polls with early
// takeover, the whole lease without it (the same test, mechanism off, is
// the control that the measurement can fail).
func TestTakeover_DeadLeaderIsReplacedWellWithinTheLease(t *testing.T) {
	for _, tc := range []struct {
		name     string
		cfg      func(string) Config
		atLeast  time.Duration // from the death
		atMost   time.Duration
		wantBrks int
	}{
		// T 2 s + two polls (0.55 s each) + B 4 s + a poll's slack.
		{"takeover on", fastConfig, 6 * time.Second, 7500 * time.Millisecond, 1},
		{"takeover off", func(id string) Config { return withoutTakeover(fastConfig(id)) }, 14 * time.Second, 16 * time.Second, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				store := electiontest.NewStore()
				cs := []*contender{start(t, store, tc.cfg("a"), Callbacks{})}
				synctest.Wait()
				cs = append(cs, start(t, store, tc.cfg("b"), Callbacks{}), start(t, store, tc.cfg("c"), Callbacks{}))
				time.Sleep(3 * time.Second)
				synctest.Wait()
				old := oneLeader(t, cs...)
				died := time.Now()
				dead(old)
				var rest []*contender
				for _, c := range cs {
					if c != old {
						rest = append(rest, c)
					}
				}
				time.Sleep(20 * time.Second)
				synctest.Wait()
				who, at := startedAfter(rest, died)
				if at.IsZero() {
					t.Fatalf("nobody took over within 20 s of %s's death", old.e.cfg.Identity)
				}
				took := at.Sub(died)
				t.Logf("%s took over %v after %s died", who, took, old.e.cfg.Identity)
				if took < tc.atLeast || took > tc.atMost {
					t.Fatalf("takeover %v after the death, want within [%v, %v]", took, tc.atLeast, tc.atMost)
				}
				var brks []Event
				for _, c := range rest {
					brks = append(brks, c.rec.all(EventLeaseBroken)...)
				}
				if len(brks) != tc.wantBrks {
					t.Fatalf("%d lease_broken events, want %d: %+v", len(brks), tc.wantBrks, brks)
				}
				if tc.wantBrks > 0 {
					b := brks[0]
					if b.Leader != old.e.cfg.Identity || b.Stale < 2*time.Second || b.BreakPeriod != 4*time.Second {
						t.Fatalf("lease_broken %+v: want leader %s, stale ≥ 2s, break period 4s", b, old.e.cfg.Identity)
					}
					// Nobody led before the break passed, and not before the
					// old leader's deadline.
					if at.Before(b.Time.Add(b.BreakPeriod)) {
						t.Fatalf("%s started at %s, before the break (%s) + B", who, at.Format(time.StampMilli), b.Time.Format(time.StampMilli))
					}
				}
				checkIntervals(t, nil, cs...)
			})
		})
	}
}

// A leader on slow storage (each request just under the request timeout)
// keeps writing heartbeats; nobody breaks it.
func TestTakeover_SlowStorageNeverBreaksAHealthyLeader(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := electiontest.NewStore()
		cs := []*contender{start(t, store, fastConfig("a"), Callbacks{})}
		synctest.Wait()
		cs = append(cs, start(t, store, fastConfig("b"), Callbacks{}), start(t, store, fastConfig("c"), Callbacks{}))
		time.Sleep(2 * time.Second)
		synctest.Wait()
		old := oneLeader(t, cs...)
		term := old.e.Status().Term
		slow := func(ctx context.Context, op string) error {
			time.Sleep(450 * time.Millisecond) // request timeout 500 ms
			return nil
		}
		for _, c := range cs {
			c.lock.SetFault(slow)
		}
		for range 120 {
			time.Sleep(time.Second)
			synctest.Wait()
			if st := old.e.Status(); st.Role != RoleLeader || st.Term != term {
				t.Fatalf("under slow storage the healthy leader lost term %d: %+v", term, st)
			}
		}
		for _, c := range cs {
			if n := len(c.rec.all(EventLeaseBroken)); n != 0 {
				t.Fatalf("%s broke a healthy leader's lease %d times", c.e.cfg.Identity, n)
			}
		}
		if n := old.lock.Calls("update"); n < 100 {
			t.Fatalf("only %d heartbeat writes in 2 minutes: the test exercised nothing", n)
		}
	})
}

// A follower frozen after its read happened at storage and before it saw
// the answer (the answer waits in the socket while it is stopped): on waking
// it holds an old heartbeat and a clock that moved on. Staleness counts to
// the read's send, not the answer, so the pause never counts.
func TestTakeover_PausedFollowerDoesNotBreakAHealthyLeader(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := electiontest.NewStore()
		// A leader that beats once a second and a follower that reads twice a
		// second (the shortest poll period allowed): every other read sees
		// the heartbeat of the read before.
		leader := fastConfig("a")
		leader.RenewDeadline, leader.RenewInterval, leader.TakeoverAfter, leader.BreakPeriod = 3*time.Second, time.Second, 3*time.Second, 0
		a := start(t, store, leader, Callbacks{})
		synctest.Wait()
		frozen := &frozenAnswers{plainLock: plainLock{store.NewLock("b")}}
		rec := &recorder{}
		follower := fastConfig("b")
		follower.RetryPeriod = minRetryPeriod
		e, err := NewElector(follower, frozen, Callbacks{OnEvent: rec.add})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { _ = e.Run(ctx); close(done) }()
		defer func() { cancel(); <-done }()
		time.Sleep(2 * time.Second)
		synctest.Wait()
		for i := range 10 {
			frozen.freezeNext(time.Duration(3+i) * time.Second)                // longer than T, less than L
			time.Sleep(20*time.Second + time.Duration(i)*130*time.Millisecond) // at every phase of the heartbeat
			synctest.Wait()
		}
		if n := len(rec.all(EventLeaseBroken)); n != 0 {
			t.Fatalf("the paused follower broke a healthy leader's lease %d times: %+v", n, rec.all(EventLeaseBroken))
		}
		// Storage refuses a break decided on a read older than the last
		// heartbeat (its version changed), so count the attempts: the pause
		// must not even make the follower judge the leader stale.
		if n := frozen.breaks(); n != 0 {
			t.Fatalf("the paused follower judged a healthy leader stale %d times (its breaks were refused: the record had changed)", n)
		}
		if frozen.frozen() < 10 {
			t.Fatalf("only %d of 10 pauses happened: the test exercised nothing", frozen.frozen())
		}
		if !a.e.IsLeader() || e.IsLeader() {
			t.Fatal("leadership moved although the leader never stopped")
		}
	})
}

// frozenAnswers delivers the answer of one Inspect late: the read happens,
// then the caller stays frozen for the given time before it sees it.
type frozenAnswers struct {
	plainLock
	mu       sync.Mutex
	next     time.Duration
	paused   int
	attempts int // Break calls
}

func (f *frozenAnswers) breaks() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.attempts
}

func (f *frozenAnswers) freezeNext(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.next = d
}

func (f *frozenAnswers) frozen() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.paused
}

func (f *frozenAnswers) Inspect(ctx context.Context) (lease.View, error) {
	v, err := f.l.Inspect(ctx)
	f.mu.Lock()
	d := f.next
	f.next = 0
	if d > 0 {
		f.paused++
	}
	f.mu.Unlock()
	time.Sleep(d) // a frozen process ignores its deadlines too
	return v, err
}

func (f *frozenAnswers) Break(ctx context.Context, version string, period time.Duration) error {
	f.mu.Lock()
	f.attempts++
	f.mu.Unlock()
	return f.l.Break(ctx, version, period)
}

// A follower configured with a shorter deadline (and so a shorter break
// period) than the holder still breaks with the period the holder
// published: the holder has stepped down before the break ends.
func TestTakeover_BreakPeriodHonoursWhatTheHolderPublished(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := electiontest.NewStore()
		slowHolder := fastConfig("a")
		slowHolder.RenewDeadline, slowHolder.RenewInterval = 6*time.Second, time.Second
		slowHolder.TakeoverAfter, slowHolder.BreakPeriod = 3*time.Second, 0 // B = ceil(6 + 1 + 0.5 + 1) = 9 s
		a := start(t, store, slowHolder, Callbacks{})
		synctest.Wait()
		b := start(t, store, fastConfig("b"), Callbacks{})
		time.Sleep(3 * time.Second)
		synctest.Wait()
		oneLeader(t, a, b)
		dead(a)
		time.Sleep(25 * time.Second)
		synctest.Wait()
		brks := b.rec.all(EventLeaseBroken)
		if len(brks) != 1 || brks[0].BreakPeriod != 9*time.Second {
			t.Fatalf("lease_broken = %+v, want one with the holder's break period 9s", brks)
		}
		checkIntervals(t, nil, a, b)
	})
}

// A holder that publishes no heartbeat (early takeover off on it) is never
// broken: its lease is waited out.
func TestTakeover_HolderWithoutHeartbeatIsNeverBroken(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := electiontest.NewStore()
		a := start(t, store, withoutTakeover(fastConfig("a")), Callbacks{})
		synctest.Wait()
		b := start(t, store, fastConfig("b"), Callbacks{})
		time.Sleep(3 * time.Second)
		synctest.Wait()
		oneLeader(t, a, b)
		died := time.Now()
		dead(a)
		time.Sleep(20 * time.Second)
		synctest.Wait()
		if n := len(b.rec.all(EventLeaseBroken)); n != 0 {
			t.Fatalf("b broke a lease whose holder publishes no heartbeat (%d breaks)", n)
		}
		if _, at := startedAfter([]*contender{b}, died); at.IsZero() || at.Sub(died) < 14*time.Second {
			t.Fatalf("b took over at %v after the death, want after the lease (≥ 14 s)", at.Sub(died))
		}
	})
}

// An operator's BreakLease(0) behaves as documented with early takeover on:
// the holder hears at its next renew or heartbeat, a follower takes over at
// its next poll, nobody sends a break of its own.
func TestTakeover_OperatorBreakStillFreesTheLeaseAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := electiontest.NewStore()
		a := start(t, store, fastConfig("a"), Callbacks{})
		synctest.Wait()
		b := start(t, store, fastConfig("b"), Callbacks{})
		time.Sleep(3 * time.Second)
		synctest.Wait()
		oneLeader(t, a, b)
		broke := time.Now()
		store.Break()
		time.Sleep(3 * time.Second)
		synctest.Wait()
		who, at := startedAfter([]*contender{b}, broke)
		if at.IsZero() || at.Sub(broke) > 600*time.Millisecond {
			t.Fatalf("after BreakLease(0) %q took over %v later, want within one poll (0.55 s)", who, at.Sub(broke))
		}
		stops := a.rec.all(EventStoppedLeading)
		if len(stops) == 0 || stops[0].Time.Sub(broke) > time.Second {
			t.Fatalf("the holder stopped %+v, want within renew interval + request timeout (1 s) of the break", stops)
		}
		if n := len(b.rec.all(EventLeaseBroken)); n != 0 {
			t.Fatalf("the follower sent %d breaks of its own after the operator's", n)
		}
		checkIntervals(t, []time.Time{broke}, a, b)
	})
}

// Followers read, they do not acquire, while the lease is held: one
// operation per poll and no 409s.
func TestTakeover_FollowerPollsWithOneReadAndNoAcquire(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := electiontest.NewStore()
		a := start(t, store, fastConfig("a"), Callbacks{})
		synctest.Wait()
		b := start(t, store, fastConfig("b"), Callbacks{})
		time.Sleep(60 * time.Second)
		synctest.Wait()
		oneLeader(t, a, b)
		if n := b.lock.Calls("acquire"); n > 0 {
			t.Fatalf("the follower sent %d acquires while the lease was held", n)
		}
		if n := b.lock.Calls("inspect"); n < 100 || n > 135 {
			t.Fatalf("the follower read %d times in 60 s with P 0.5 s, want ~120", n)
		}
	})
}

func TestConfig_TakeoverRules(t *testing.T) {
	for _, tc := range []struct {
		name  string
		edit  func(*Config)
		field string // "" valid
		rule  string
	}{
		{"fast profile", func(c *Config) {}, "", ""},
		{"off", func(c *Config) { *c = withoutTakeover(*c) }, "", ""},
		{"break period defaults to the minimum", func(c *Config) { c.BreakPeriod = 0 }, "", ""},
		{"break period without takeover", func(c *Config) { c.TakeoverAfter = 0 }, "BreakPeriod", "must be 0 while TakeoverAfter is 0"},
		{"T below two renew intervals", func(c *Config) { c.TakeoverAfter = 900 * time.Millisecond }, "TakeoverAfter", "at least 2 × RenewInterval"},
		{"T below a renew and two slow requests", func(c *Config) {
			c.RenewDeadline, c.RenewInterval, c.TakeoverAfter, c.BreakPeriod = 3*time.Second, time.Second, 2*time.Second, 0
		}, "TakeoverAfter", "RenewInterval + 2 × request timeout (3s)"},
		{"B below D + timeout + margin", func(c *Config) { c.BreakPeriod = 2 * time.Second }, "BreakPeriod", "at least RenewDeadline + request timeout"},
		{"B exactly D + timeout + margin: no room for storage's whole seconds", func(c *Config) { c.BreakPeriod = 3 * time.Second }, "BreakPeriod", "storage counts break periods in whole seconds"},
		{"B not whole seconds", func(c *Config) { c.BreakPeriod = 4500 * time.Millisecond }, "BreakPeriod", "whole number of seconds"},
		{"B above 60 s", func(c *Config) { c.BreakPeriod = 61 * time.Second }, "BreakPeriod", "at most 1m0s"},
		{"T + B not below L", func(c *Config) { c.TakeoverAfter = 12 * time.Second }, "TakeoverAfter", "less than LeaseDuration"},
		{"default deadline cannot take over early", func(c *Config) {
			c.RenewDeadline, c.RenewInterval, c.TakeoverAfter, c.BreakPeriod = 10*time.Second, 2*time.Second, 6*time.Second, 0
		}, "TakeoverAfter", "less than LeaseDuration"},
		{"run mode's kill grace counts", func(c *Config) { c.StopAfterDeadline = 2 * time.Second }, "BreakPeriod", "+ 2s after the deadline"},
		{"negative T", func(c *Config) { c.TakeoverAfter = -time.Second }, "TakeoverAfter", "must be ≥ 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := fastConfig("a")
			tc.edit(&c)
			err := c.Validate()
			var ce *ConfigError
			switch {
			case tc.field == "" && err != nil:
				t.Fatalf("Validate() = %v, want nil", err)
			case tc.field == "":
			case !errors.As(err, &ce):
				t.Fatalf("Validate() = %v, want a *ConfigError on %s", err, tc.field)
			case ce.Field != tc.field || !strings.Contains(ce.Rule, tc.rule):
				t.Fatalf("Validate() = %v, want field %s and a rule containing %q", err, tc.field, tc.rule)
			}
		})
	}
}

func TestNewElector_TakeoverNeedsABreaker(t *testing.T) {
	_, err := NewElector(fastConfig("a"), plainLock{electiontest.NewStore().NewLock("a")}, Callbacks{})
	if !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("NewElector with a lock that cannot break = %v, want ErrInvalidConfig", err)
	}
}

// plainLock hides electiontest.Lock's Breaker methods.
type plainLock struct{ l *electiontest.Lock }

func (p plainLock) Acquire(ctx context.Context, id string, d time.Duration) error {
	return p.l.Acquire(ctx, id, d)
}
func (p plainLock) Renew(ctx context.Context, id string) error    { return p.l.Renew(ctx, id) }
func (p plainLock) Release(ctx context.Context, id string) error  { return p.l.Release(ctx, id) }
func (p plainLock) Get(ctx context.Context) (lease.Record, error) { return p.l.Get(ctx) }
func (p plainLock) Update(ctx context.Context, id string, r lease.Record) error {
	return p.l.Update(ctx, id, r)
}
func (p plainLock) Describe() string { return "plain " + p.l.Describe() }
func (p plainLock) TermFloor() int64 { return p.l.TermFloor() }

// A leader that dies before its first renew (so before its first heartbeat)
// is still broken early: the term write carries the contract (heartbeat 0).
func TestTakeover_LeaderDeadBeforeItsFirstHeartbeatIsBrokenEarly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := electiontest.NewStore()
		a := start(t, store, fastConfig("a"), Callbacks{})
		synctest.Wait()
		b := start(t, store, fastConfig("b"), Callbacks{})
		synctest.Wait()
		oneLeader(t, a, b)
		if n := a.lock.Calls("update"); n != 1 {
			t.Fatalf("a wrote %d records before dying, want only its term write", n)
		}
		died := time.Now()
		dead(a)
		time.Sleep(20 * time.Second)
		synctest.Wait()
		_, at := startedAfter([]*contender{b}, died)
		if at.IsZero() || at.Sub(died) > 7500*time.Millisecond { // T 2 s + B 4 s + polls
			t.Fatalf("b took over %v after a died before its first heartbeat, want an early takeover (≤ 7.5 s)", at.Sub(died))
		}
		checkIntervals(t, nil, a, b)
	})
}

// A break decided on one leadership's record and delivered late — held in
// the network past the breaker's timeout, received once a later leadership
// holds the lease — must not end that later leadership: storage must refuse
// a break whose read no longer describes the lease. Each follower's first
// break is held for B + 3 s; its second one (a poll later) ends the dead
// leader's lease, and the held ones arrive while the next leader leads.
func TestTakeover_LateBreakLeavesTheNextLeadershipAlone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := electiontest.NewStore()
		a := start(t, store, fastConfig("a"), Callbacks{})
		synctest.Wait()
		delay := fastConfig("b").effectiveBreakPeriod() + 3*time.Second
		var followers []*contender
		var late []*lateBreaker
		for _, id := range []string{"b", "c"} {
			lb := &lateBreaker{plainLock: plainLock{store.NewLock(id)}, delay: delay}
			c := startOn(t, fastConfig(id), lb, lb.l, Callbacks{})
			followers, late = append(followers, c), append(late, lb)
		}
		time.Sleep(3 * time.Second)
		synctest.Wait()
		oneLeader(t, append([]*contender{a}, followers...)...)
		died := time.Now()
		dead(a)
		time.Sleep(25 * time.Second)
		synctest.Wait()
		who, at := startedAfter(followers, died)
		if at.IsZero() {
			t.Fatalf("nobody took over within 25 s of the leader's death")
		}
		var lastDelivery time.Time
		for _, lb := range late {
			for _, d := range lb.deliveries() {
				if d.After(lastDelivery) {
					lastDelivery = d
				}
			}
		}
		if !lastDelivery.After(at) {
			t.Fatalf("no held break reached the store after %s began leading (%s; last delivery %s): the test exercised nothing", who, at.Format(time.StampMilli), lastDelivery.Format(time.StampMilli))
		}
		for _, c := range followers {
			if c.e.cfg.Identity != who {
				continue
			}
			for _, ev := range c.rec.all(EventStoppedLeading) {
				if ev.Time.After(at) {
					t.Fatalf("%s, leading since %s, stopped at %s (%s): a late break decided on the dead leader's record ended it (held breaks delivered up to %s)",
						who, at.Format(time.StampMilli), ev.Time.Format(time.StampMilli), ev.Reason, lastDelivery.Format(time.StampMilli))
				}
			}
			if !c.e.IsLeader() {
				t.Fatalf("%s no longer leads", who)
			}
		}
		checkIntervals(t, nil, append([]*contender{a}, followers...)...)
	})
}

// lateBreaker holds the first Break of its lock in flight: the caller's
// request times out, and the break reaches the store delay after it was
// sent, whoever holds the lease by then.
type lateBreaker struct {
	plainLock
	delay time.Duration

	mu        sync.Mutex
	held      bool
	delivered []time.Time
}

func (l *lateBreaker) Inspect(ctx context.Context) (lease.View, error) { return l.l.Inspect(ctx) }

func (l *lateBreaker) Break(ctx context.Context, version string, period time.Duration) error {
	l.mu.Lock()
	first := !l.held
	l.held = true
	l.mu.Unlock()
	if !first {
		return l.l.Break(ctx, version, period)
	}
	go func() {
		time.Sleep(l.delay)
		_ = l.l.Break(context.Background(), version, period)
		l.mu.Lock()
		l.delivered = append(l.delivered, time.Now())
		l.mu.Unlock()
	}()
	<-ctx.Done()
	return ctx.Err()
}

func (l *lateBreaker) deliveries() []time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]time.Time(nil), l.delivered...)
}

// A break aimed at the previous leadership can still land in the one round
// trip between the next leader's acquire and its term write: the record is
// the previous one's until that write. The new leader finds its lease
// breaking when it reads it back after the term write, gives it up before
// anything starts, and leads on its next acquire.
func TestTakeover_BreakLandingBeforeTheTermWriteIsNotLedOn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := electiontest.NewStore()
		store.SetRecord(lease.Record{Holder: "a", Term: 5, Heartbeat: 9, BeatEvery: 1500 * time.Millisecond, StopWithin: 2500 * time.Millisecond})
		bl := &breakBeforeFirstWrite{plainLock: plainLock{store.NewLock("b")}, other: store.NewLock("late")}
		b := startOn(t, fastConfig("b"), bl, bl.l, Callbacks{})
		time.Sleep(10 * time.Second)
		synctest.Wait()
		if !bl.landed {
			t.Fatal("the late break never landed before a term write: the test exercised nothing")
		}
		if lost := b.rec.all(EventStoppedLeading); len(lost) != 0 {
			t.Fatalf("b led on a lease that was already breaking and lost it: %+v", lost)
		}
		started := b.rec.all(EventStartedLeading)
		if len(started) != 1 || !b.e.IsLeader() {
			t.Fatalf("b started leading %d times and leads now: %v; want once, on a lease nobody broke", len(started), b.e.IsLeader())
		}
		failed := b.rec.all(EventAcquireFailed)
		if len(failed) == 0 || !strings.Contains(failed[0].Reason, "broken before our term write") {
			t.Fatalf("acquire_failed events %+v; want one saying the lease was broken before the term write", failed)
		}
	})
}

// breakBeforeFirstWrite delivers, just before its first record write, a
// break conditioned on the record as it was: what a follower's break held in
// the network since its read of the previous leadership does.
type breakBeforeFirstWrite struct {
	plainLock
	other  *electiontest.Lock
	landed bool
}

func (l *breakBeforeFirstWrite) Inspect(ctx context.Context) (lease.View, error) {
	return l.l.Inspect(ctx)
}

func (l *breakBeforeFirstWrite) Break(ctx context.Context, version string, period time.Duration) error {
	return l.l.Break(ctx, version, period)
}

func (l *breakBeforeFirstWrite) Update(ctx context.Context, id string, r lease.Record) error {
	if !l.landed {
		v, err := l.other.Inspect(ctx)
		if err != nil {
			return err
		}
		if err := l.other.Break(ctx, v.Version, 4*time.Second); err != nil {
			return err
		}
		l.landed = true
	}
	return l.l.Update(ctx, id, r)
}
