package election

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/uuid"

	"github.com/blobleader/blobleader/worker/election/electiontest"
	"github.com/blobleader/blobleader/worker/election/lease"
	"github.com/blobleader/blobleader/worker/internal/setupconflict"
)

// holdAs takes the store's lease as another lock and stamps rec, renewing
// it every 2 s while renew is true; the returned func stops the renews.
func holdAs(t *testing.T, store *electiontest.Store, rec lease.Record) (stop func()) {
	t.Helper()
	other := store.NewLock("other")
	id := uuid.NewString()
	if err := other.Acquire(context.Background(), id, 15*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := other.Update(context.Background(), id, rec); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-time.After(2 * time.Second):
				_ = other.Renew(ctx, id)
			}
		}
	}()
	t.Cleanup(cancel)
	return cancel
}

// startLogged runs an elector for cfg on store, logging JSON into the
// returned buffer.
func startLogged(t *testing.T, store *electiontest.Store, cfg Config) (*Elector, *lockedBuffer) {
	t.Helper()
	logs := &lockedBuffer{}
	cfg.Logger = slog.New(slog.NewJSONHandler(logs, nil))
	e, err := NewElector(cfg, store.NewLock(cfg.Identity), Callbacks{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = e.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return e, logs
}

// A lease held, and renewed, over a record that another process wrote under
// our identity — or that a contender of another mode wrote — is reported
// once it has lasted conflictAfter, not before; it clears when the lease
// goes. A lease that is not renewed (what a process under our identity that
// is gone, or a fleet of the other mode that was replaced, leaves behind)
// expires within L and is never reported.
func TestElector_ConflictingSetUpIsReportedOnlyOnceItOutlastsALease(t *testing.T) {
	for _, tt := range []struct {
		name string
		rec  lease.Record
		kind string
	}{
		{"another process under our identity", lease.Record{Holder: "w1", Term: 7, Mode: "worker", Process: "elsewhere/1/1"}, conflictIdentity},
		{"our identity, writer did not say which process", lease.Record{Holder: "w1", Term: 7}, conflictIdentity},
		{"a contender of another mode", lease.Record{Holder: "sup", Term: 7, Mode: "run", Process: "elsewhere/1/1"}, conflictMode},
	} {
		t.Run(tt.name+", renewed", func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				store := electiontest.NewStore()
				stop := holdAs(t, store, tt.rec)
				cfg := DefaultConfig("w1")
				cfg.Mode = "worker"
				e, logs := startLogged(t, store, cfg)
				time.Sleep(cfg.conflictAfter() - time.Millisecond)
				synctest.Wait()
				if err := e.Ready(); err != nil || len(logs.lines(t, setupconflict.LogEvent)) != 0 {
					t.Fatalf("before conflictAfter: Ready() = %v, setup_conflict lines %v; want neither", err, logs.lines(t, setupconflict.LogEvent))
				}
				time.Sleep(1200 * time.Millisecond) // the next poll's read
				synctest.Wait()
				err := e.Ready()
				lines := logs.lines(t, setupconflict.LogEvent)
				if err == nil || !strings.Contains(err.Error(), tt.kind) || e.Status().Conflict == "" {
					t.Fatalf("after conflictAfter: Ready() = %v, Status().Conflict %q; want the %s conflict", err, e.Status().Conflict, tt.kind)
				}
				if err := e.Healthy(); err != nil {
					t.Fatalf("after conflictAfter: Healthy() = %v; a conflict is readiness, not liveness (a restart does not cure it)", err)
				}
				if len(lines) != 1 || lines[0]["kind"] != tt.kind || lines[0]["holder"] != tt.rec.Holder || lines[0]["holder_mode"] != tt.rec.Mode ||
					lines[0]["mode"] != "worker" || lines[0]["level"] != "WARN" {
					t.Fatalf("setup_conflict lines %v; want one naming both sides", lines)
				}
				time.Sleep(cfg.LeaseDuration / 2)
				synctest.Wait()
				if n := len(logs.lines(t, setupconflict.LogEvent)); n != 1 {
					t.Fatalf("%d setup_conflict lines within L; want one per L", n)
				}
				stop() // the other side goes: its lease expires, we lead
				time.Sleep(cfg.LeaseDuration + 2*time.Second)
				synctest.Wait()
				if !e.IsLeader() || e.Ready() != nil || e.Status().Conflict != "" {
					t.Fatalf("after the other side went: leader %v, Ready() %v, Conflict %q", e.IsLeader(), e.Ready(), e.Status().Conflict)
				}
			})
		})
		t.Run(tt.name+", left behind", func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				store := electiontest.NewStore()
				holdAs(t, store, tt.rec)() // acquired and stamped, never renewed
				cfg := DefaultConfig("w1")
				cfg.Mode = "worker"
				e, logs := startLogged(t, store, cfg)
				time.Sleep(2 * cfg.conflictAfter())
				synctest.Wait()
				if !e.IsLeader() || e.Ready() != nil || len(logs.lines(t, setupconflict.LogEvent)) != 0 {
					t.Fatalf("a lease left behind: leader %v, Ready() %v, setup_conflict lines %v; want leadership and no report",
						e.IsLeader(), e.Ready(), logs.lines(t, setupconflict.LogEvent))
				}
			})
		})
	}
}
