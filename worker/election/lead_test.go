package election

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/blobleader/blobleader/worker/election/electiontest"
)

// One transient failure of a release (a timeout under load, a 503) must not
// cost the fleet a whole lease duration: the releasing elector tries again
// with the same lease ID (safe: storage refuses it for any other lease), so a
// follower takes over within a poll of the stop, not after the lease expires.
func TestElector_ReleaseRetriedAfterATransientFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := electiontest.NewStore()
		a := start(t, store, testConfig("a"), Callbacks{})
		time.Sleep(time.Millisecond)
		synctest.Wait()
		if !a.e.IsLeader() {
			t.Fatal("a does not lead")
		}
		b := start(t, store, testConfig("b"), Callbacks{})
		var failed atomic.Int32
		a.lock.SetFault(func(ctx context.Context, op string) error {
			if op == "release" && failed.Add(1) == 1 {
				return errTransient
			}
			return nil
		})
		time.Sleep(3 * time.Second) // a few renews
		stopped := time.Now()
		a.cancel()
		<-a.exited
		for !b.e.IsLeader() {
			if time.Since(stopped) > 5*time.Second {
				t.Fatalf("b still does not lead %v after a stopped with one failed release: the lease was left to expire (L = %v)", time.Since(stopped), a.e.cfg.LeaseDuration)
			}
			time.Sleep(100 * time.Millisecond)
		}
		if n := failed.Load(); n < 2 {
			t.Fatalf("%d release calls, want the failed one retried", n)
		}
	})
}

// lateRelease captures the first release of a leadership whose renews hang
// and answers it with a timeout without performing it: the request is "held
// in flight". deliver performs it later, the way a proxy that held it would.
type lateRelease struct {
	mu       sync.Mutex
	captured bool
	lock     *electiontest.Lock
	id       string
}

func (l *lateRelease) fault(ctx context.Context, op string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case !l.captured && op == "renew":
		<-ctx.Done() // the first leadership's renews hang
		return ctx.Err()
	case !l.captured && op == "release":
		l.captured = true
		l.id = l.lock.LastLeaseID("release")
		return fmt.Errorf("release: %w (held in flight)", context.DeadlineExceeded)
	}
	return nil
}

// A late Release from an ended leadership must not end a later one.
func TestElector_LateReleaseFromAnEndedLeadershipCannotEndALaterOne(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := electiontest.NewStore()
		a := start(t, store, testConfig("a"), Callbacks{})
		synctest.Wait()
		oneLeader(t, a)
		late := &lateRelease{lock: a.lock}
		a.lock.SetFault(late.fault)
		b := start(t, store, testConfig("b"), Callbacks{})

		// a steps down at D = 10s and its release is held; the lease is still
		// live at storage until 15s, so a (after its 2·P pause) or b takes it.
		time.Sleep(13 * time.Second)
		synctest.Wait()
		if !late.captured {
			t.Fatal("no release was sent at the deadline")
		}
		// Whoever leads now, the old leadership's release arrives late.
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_ = a.lock.Release(ctx, late.id)
		cancel()
		for range 20 { // 5 s in quarter-second steps
			time.Sleep(250 * time.Millisecond)
			synctest.Wait()
			if ls := leaders(a, b); len(ls) > 1 {
				t.Fatalf("two leaders at %s after the late release: a (term %d) and b (term %d)",
					time.Now().Format(time.StampMilli), a.e.Status().Term, b.e.Status().Term)
			}
		}
	})
}

// The task's context is cancelled the instant leadership ends, not
// after the in-flight renew has been drained.
func TestElector_TaskCancelledAtTheDeadlineEvenIfARenewIsStillInFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := electiontest.NewStore()
		var cancelledAt time.Time
		var once sync.Once
		t0 := time.Now()
		a := start(t, store, testConfig("a"), Callbacks{OnStartedLeading: func(ctx context.Context, term int64) error {
			<-ctx.Done()
			once.Do(func() { cancelledAt = time.Now() })
			return nil
		}})
		synctest.Wait()
		oneLeader(t, a)
		// Renews take 5 s whatever their context says (a request the
		// transport cannot abort at once).
		a.lock.SetFault(func(ctx context.Context, op string) error {
			if op == "renew" {
				time.Sleep(5 * time.Second)
				return errors.New("renew: too late")
			}
			return nil
		})
		time.Sleep(20 * time.Second)
		synctest.Wait()
		if deadline := t0.Add(10 * time.Second); !cancelledAt.Equal(deadline) {
			t.Fatalf("task context cancelled at +%s, want exactly at the deadline +10s", cancelledAt.Sub(t0))
		}
	})
}

// A task is never started after its leadership lapsed (a pause
// between the term write and the task start, modelled by a slow callback).
func TestElector_TaskNeverStartsAfterItsLeadershipLapsed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := electiontest.NewStore()
		var mu sync.Mutex
		var late []string
		first := true
		t0 := time.Now()
		start(t, store, testConfig("a"), Callbacks{
			OnNewLeader: func(id string, term int64) {
				if first {
					first = false
					time.Sleep(11 * time.Second) // the process is frozen past D
				}
			},
			OnStartedLeading: func(ctx context.Context, term int64) error {
				if term == 1 && time.Since(t0) >= 10*time.Second {
					mu.Lock()
					late = append(late, fmt.Sprintf("term %d started at +%s", term, time.Since(t0)))
					mu.Unlock()
				}
				<-ctx.Done()
				return nil
			},
		})
		time.Sleep(15 * time.Second)
		synctest.Wait()
		mu.Lock()
		defer mu.Unlock()
		if len(late) > 0 {
			t.Fatalf("a task started after its leadership lapsed at +10s: %v", late)
		}
	})
}

// No request of a renew cycle may outlive the leadership it tries to
// extend: each one's context ends by the deadline as it stood when the
// cycle was sent, even where the request timeout reaches past it (the
// intervals below do not divide D, so a cycle is sent within a request
// timeout of the deadline).
func TestElector_RenewRequestsEndByTheDeadline(t *testing.T) {
	slow := testConfig("a")
	slow.RenewInterval = 3 * time.Second // request timeout 3s; D 10s
	fast := fastConfig("a")
	fast.RenewDeadline, fast.TakeoverAfter = 1600*time.Millisecond, 2350*time.Millisecond // request timeout 0.5s
	for _, tc := range []struct {
		name string
		cfg  Config
	}{
		{"renews", slow},
		{"renews and heartbeats (early takeover)", fast},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				store := electiontest.NewStore()
				a := start(t, store, tc.cfg, Callbacks{})
				synctest.Wait()
				oneLeader(t, a)
				var mu sync.Mutex
				var ops []string
				var late []string
				a.lock.SetFault(func(ctx context.Context, op string) error {
					if op != "renew" && op != "update" {
						return nil
					}
					a.e.mu.Lock()
					deadline, leading := a.e.deadline, a.e.leading
					a.e.mu.Unlock()
					if !leading {
						return nil // a later acquisition's term write
					}
					mu.Lock()
					ops = append(ops, op)
					if dl, ok := ctx.Deadline(); !ok || dl.After(deadline) {
						late = append(late, fmt.Sprintf("%s ending %v past the deadline", op, dl.Sub(deadline)))
					}
					mu.Unlock()
					<-ctx.Done()
					return ctx.Err()
				})
				time.Sleep(2 * tc.cfg.RenewDeadline)
				synctest.Wait()
				mu.Lock()
				defer mu.Unlock()
				if len(ops) == 0 {
					t.Fatal("no renew or heartbeat was sent while the leadership lasted")
				}
				if len(late) > 0 {
					t.Errorf("of %d requests, %d ran on a context outliving the leadership: %v", len(ops), len(late), late)
				}
			})
		})
	}
}
