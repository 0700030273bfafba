package election

import (
	"context"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/uuid"

	"github.com/blobleader/blobleader/worker/election/electiontest"
	"github.com/blobleader/blobleader/worker/internal/setupconflict"
)

// confirmingConfig is the binary's election: early takeover off, the
// leader confirming its record every L/2.
func confirmingConfig(id string) Config {
	c := testConfig(id)
	c.ConfirmEvery = c.LeaseDuration / 2
	return c
}

// A tool outside the election holding the lock's lease and renewing it (an
// operator's `az storage blob lease acquire` with its own lease ID) leaves
// the record of the last leader in place. Nobody confirms that leader any
// more: no follower's Status may name it (the worker it names says it is a
// follower), and once it has lasted conflictAfter every contender reports a
// conflict of kind foreign — Ready, Status().Conflict and a setup_conflict
// line naming the lease state — while Healthy stays nil (a restart cures
// nothing). When the tool lets go, a leader follows and the report clears.
func TestElector_ForeignHolderIsReportedAndNamedAsNoLeader(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := electiontest.NewStore()
		a, alog := startLogged(t, store, confirmingConfig("a"))
		time.Sleep(time.Second)
		synctest.Wait()
		b, blog := startLogged(t, store, confirmingConfig("b"))
		time.Sleep(20 * time.Second) // b reads a's record, a confirms it
		synctest.Wait()
		if !a.IsLeader() || b.Status().Leader != "a" {
			t.Fatalf("a leads %v, b names %q; want a leading and named", a.IsLeader(), b.Status().Leader)
		}
		// The tool: break the lease (an operator's break), take it under its
		// own lease ID, and renew it every 2 s; it never writes the record.
		store.Break()
		tool := store.NewLock("tool")
		id := uuid.NewString()
		if err := tool.Acquire(context.Background(), id, 15*time.Second); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go func() {
			for {
				select {
				case <-ctx.Done():
					return
				case <-time.After(2 * time.Second):
					_ = tool.Renew(ctx, id)
				}
			}
		}()
		held := time.Now()
		cfg := confirmingConfig("x")
		// A follower finds the record stale one poll after the promise (the
		// confirmation gap, a read and the clock margin) ran out, counted
		// from the last confirmation, which came before the tool's break;
		// it reports once that has lasted conflictAfter.
		unnamed := cfg.confirmGap() + cfg.RequestTimeout() + takeoverMargin + 2*cfg.RetryPeriod*11/10 + cfg.RequestTimeout()
		bound := unnamed + cfg.conflictAfter() + 2*cfg.RetryPeriod*11/10
		for time.Since(held) < bound {
			time.Sleep(500 * time.Millisecond)
			synctest.Wait()
			for _, e := range []*Elector{a, b} {
				st := e.Status()
				if st.Role == RoleLeader && time.Since(held) > cfg.RenewInterval+cfg.RequestTimeout() {
					t.Fatalf("%s leads while a tool holds the lease", st.Identity)
				}
				if st.Leader != "" && time.Since(held) > unnamed {
					t.Fatalf("%v after the tool took the lease %s's Status names %q as leader (term %d), which nobody confirms", time.Since(held), st.Identity, st.Leader, st.Term)
				}
			}
		}
		for _, c := range []struct {
			e    *Elector
			logs *lockedBuffer
		}{{a, alog}, {b, blog}} {
			id := c.e.cfg.Identity
			if err := c.e.Ready(); err == nil || !strings.Contains(err.Error(), conflictForeign) {
				t.Errorf("%s: Ready() = %v after %v of a foreign holder; want the %s conflict", id, err, bound, conflictForeign)
			}
			if err := c.e.Healthy(); err != nil {
				t.Errorf("%s: Healthy() = %v; a foreign holder is readiness, not liveness", id, err)
			}
			lines := c.logs.lines(t, setupconflict.LogEvent)
			if len(lines) == 0 || lines[0]["kind"] != conflictForeign || lines[0]["lease_state"] == nil || lines[0]["holder"] != "a" {
				t.Errorf("%s: setup_conflict lines %v; want one of kind %s naming the record's holder a and the lease state", id, lines, conflictForeign)
			}
		}
		// The tool lets go: a leader follows, and the report clears.
		cancel()
		_ = tool.Release(context.Background(), id)
		time.Sleep(2*cfg.RetryPeriod*11/10 + cfg.RequestTimeout() + time.Second)
		synctest.Wait()
		if !a.IsLeader() && !b.IsLeader() {
			t.Fatal("no leader after the tool released the lease")
		}
		for _, e := range []*Elector{a, b} {
			if err := e.Ready(); err != nil || e.Status().Conflict != "" {
				t.Errorf("%s: Ready() = %v, Conflict %q after the tool let go", e.cfg.Identity, err, e.Status().Conflict)
			}
		}
	})
}

// A leader that confirms is named by its followers at every sample, for
// many lease durations, and never reported; nor is a leader that promises
// nothing (an older version, or ConfirmEvery 0): its record is never
// judged.
func TestElector_LeaderThatConfirmsOrPromisesNothingIsNeverForeign(t *testing.T) {
	for _, tc := range []struct {
		name   string
		leader Config
	}{
		{"confirming leader", confirmingConfig("a")},
		{"leader that promises nothing", testConfig("a")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				store := electiontest.NewStore()
				a, _ := startLogged(t, store, tc.leader)
				time.Sleep(time.Second)
				synctest.Wait()
				b, blog := startLogged(t, store, confirmingConfig("b"))
				time.Sleep(15 * time.Second) // b's first held poll reads the record
				synctest.Wait()
				for range 240 { // 2 minutes
					time.Sleep(500 * time.Millisecond)
					synctest.Wait()
					if !a.IsLeader() || b.Status().Leader != "a" || b.Ready() != nil {
						t.Fatalf("at %s: a leads %v, b names %q, b.Ready() = %v; want a named, no conflict", time.Now().Format(time.StampMilli), a.IsLeader(), b.Status().Leader, b.Ready())
					}
				}
				if lines := blog.lines(t, setupconflict.LogEvent); len(lines) != 0 {
					t.Fatalf("setup_conflict lines %v for a live leader", lines)
				}
			})
		})
	}
}
