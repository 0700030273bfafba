package election

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/blobleader/blobleader/worker/election/electiontest"
	"github.com/blobleader/blobleader/worker/election/lease"
)

// fastConfig is the fast profile (FastConfig: D 1.5 s, renew 0.5 s, P 0.5 s,
// T 2.25 s) with a quiet logger.
func fastConfig(id string) Config {
	c := FastConfig(id)
	c.Logger = quietLogger()
	return c
}

func withoutTakeover(c Config) Config {
	c.TakeoverAfter = 0
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

// The takeover after a dead host: about T with early takeover (the last
// heartbeat lands up to a renew interval before the death, a follower sees
// it up to a poll after), the whole lease without it (the same test,
// mechanism off, is the control that the measurement can fail).
func TestTakeover_DeadLeaderIsReplacedWellWithinTheLease(t *testing.T) {
	for _, tc := range []struct {
		name     string
		cfg      func(string) Config
		atLeast  time.Duration // from the death
		atMost   time.Duration
		wantBrks int
	}{
		// T 2.25 s − a renew interval … T + a poll (0.55 s).
		{"takeover on", fastConfig, 1700 * time.Millisecond, 2900 * time.Millisecond, 1},
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
					b, cfg := brks[0], old.e.cfg
					if b.Leader != cfg.Identity || b.Stale < cfg.TakeoverAfter {
						t.Fatalf("lease_broken %+v: want leader %s, stale ≥ %v", b, cfg.Identity, cfg.TakeoverAfter)
					}
					// E1: nobody led before the old leader's belief ended and
					// a request it had in flight was over.
					if end := lastBeat(t, old).ValidUntil.Add(cfg.RequestTimeout()); at.Before(end) {
						t.Fatalf("%s started at %s, before the old leader's deadline + request timeout (%s)", who, at.Format(time.StampMilli), end.Format(time.StampMilli))
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
		leader.RenewDeadline, leader.RenewInterval, leader.TakeoverAfter = 3*time.Second, time.Second, 4250*time.Millisecond
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
			frozen.freezeNext(time.Duration(5+i) * time.Second)                // longer than the 4.25 s it waits, less than L
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

// A follower configured with a shorter deadline (and so a shorter
// TakeoverAfter) than the holder still waits what the holder published: the
// holder has stepped down before the break.
func TestTakeover_BreakWaitsWhatTheHolderPublished(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := electiontest.NewStore()
		slowHolder := fastConfig("a")
		slowHolder.RenewDeadline, slowHolder.RenewInterval = 6*time.Second, time.Second
		slowHolder.TakeoverAfter = 7250 * time.Millisecond // D 6 s + request timeout 1 s + 0.25 s
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
		if len(brks) != 1 || brks[0].Stale < slowHolder.TakeoverAfter {
			t.Fatalf("lease_broken = %+v, want one after the record was unchanged for the holder's 7.25s", brks)
		}
		if _, at := startedAfter([]*contender{b}, brks[0].Time.Add(-time.Second)); at.Before(lastBeat(t, a).ValidUntil.Add(slowHolder.RequestTimeout())) {
			t.Fatalf("b led at %s, before the holder's deadline + request timeout", at.Format(time.StampMilli))
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
		{"fast profile, T exactly D + timeout + 0.25 s", func(c *Config) { c.TakeoverAfter = 2250 * time.Millisecond }, "", ""},
		{"off", func(c *Config) { *c = withoutTakeover(*c) }, "", ""},
		{"T below D + timeout + margin", func(c *Config) { c.TakeoverAfter = 2249 * time.Millisecond }, "TakeoverAfter", "at least RenewDeadline + request timeout + 250ms (2.25s)"},
		{"T below a renew and two slow requests", func(c *Config) {
			// D 1.5 s, renew 0.5 s, but a request timeout of 0.5 s and a
			// renew interval of 0.5 s: 2.25 s covers 1.5 s. Lengthen the
			// renew interval instead: 1 s + 2 × 0.5 s = 2 s < 2.25 s, and
			// with D 3 s the horizon 3 + 1 + 0.25 = 4.25 s dominates.
			c.RenewDeadline, c.RenewInterval, c.TakeoverAfter = 3*time.Second, time.Second, 4*time.Second
		}, "TakeoverAfter", "(4.25s)"},
		{"T not below L", func(c *Config) { c.TakeoverAfter = 15 * time.Second }, "TakeoverAfter", "less than LeaseDuration"},
		{"the default deadline can take over early, late", func(c *Config) {
			c.RenewDeadline, c.RenewInterval, c.TakeoverAfter = 10*time.Second, 2*time.Second, 12250*time.Millisecond
		}, "", ""},
		{"what outlives the deadline counts", func(c *Config) { c.StopAfterDeadline = 2 * time.Second }, "TakeoverAfter", "+ 2s after the deadline"},
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
		// a's host dies just after its term write: every later request of
		// it hangs (its first heartbeat goes out at once, and never lands).
		var writes atomic.Int32
		al := store.NewLock("a")
		al.SetFault(func(ctx context.Context, op string) error {
			if op == "update" && writes.Add(1) == 1 {
				return nil // the term write
			}
			if op == "acquire" || op == "inspect" || op == "get" {
				return nil
			}
			<-ctx.Done()
			return ctx.Err()
		})
		a := startOn(t, fastConfig("a"), al, al, Callbacks{})
		synctest.Wait()
		died := time.Now()
		b := start(t, store, fastConfig("b"), Callbacks{})
		synctest.Wait()
		if rec := store.Record(); rec.Holder != "a" || rec.Heartbeat != 0 || rec.StopAfterWrite == 0 {
			t.Fatalf("the record is %+v; want a's term write (heartbeat 0, with the contract) and nothing after it", rec)
		}
		time.Sleep(20 * time.Second)
		synctest.Wait()
		_, at := startedAfter([]*contender{b}, died)
		if at.IsZero() || at.Sub(died) > 3*time.Second { // T 2.25 s + a poll
			t.Fatalf("b took over %v after a died before its first heartbeat, want an early takeover (≤ 3 s)", at.Sub(died))
		}
		checkIntervals(t, nil, a, b)
	})
}

// A break decided on one leadership's record and delivered late — held in
// the network past the breaker's timeout, received once a later leadership
// holds the lease — must not end that later leadership: storage must refuse
// a break whose read no longer describes the lease. Each follower's first
// break is held for 4 s; its second one (a poll later) ends the dead
// leader's lease, and the held ones arrive while the next leader leads.
func TestTakeover_LateBreakLeavesTheNextLeadershipAlone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := electiontest.NewStore()
		a := start(t, store, fastConfig("a"), Callbacks{})
		synctest.Wait()
		delay := 4 * time.Second
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
// the previous one's until that write. The break (period 0) ends the new
// lease at once, so storage refuses the term write: the new leader never
// starts on it, and leads on its next acquire.
func TestTakeover_BreakLandingBeforeTheTermWriteIsNotLedOn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := electiontest.NewStore()
		store.SetRecord(lease.Record{Holder: "a", Term: 5, Heartbeat: 9, BeatEvery: 1500 * time.Millisecond, StopAfterWrite: 2 * time.Second})
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
		if len(failed) == 0 || !strings.Contains(failed[0].Reason, "term write") || !strings.Contains(failed[0].Reason, "lease") {
			t.Fatalf("acquire_failed events %+v; want one saying the term write was refused for the lease", failed)
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
		if err := l.other.Break(ctx, v.Version, 0); err != nil {
			return err
		}
		l.landed = true
	}
	return l.l.Update(ctx, id, r)
}
