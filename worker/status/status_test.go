package status

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/blobleader/blobleader/worker/election"
	"github.com/blobleader/blobleader/worker/election/electiontest"
)

func TestHandler_RoleAndMetricsFollowTheDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := electiontest.NewStore()
		lock := store.NewLock("w1")
		cfg := election.DefaultConfig("w1")
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
		var e *election.Elector
		m := NewMetrics(func() *election.Elector { return e })
		var err error
		e, err = election.NewElector(cfg, lock, election.Callbacks{OnEvent: m.ObserveEvent})
		if err != nil {
			t.Fatal(err)
		}
		h := Handler(e, m)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { _ = e.Run(ctx); close(done) }()
		defer func() { cancel(); <-done }()
		synctest.Wait()

		doc := func() Document {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest("GET", "/status", nil))
			var d Document
			if err := json.NewDecoder(rec.Body).Decode(&d); err != nil {
				t.Fatal(err)
			}
			return d
		}
		metric := func(name string) string {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
			for _, l := range strings.Split(rec.Body.String(), "\n") {
				if strings.HasPrefix(l, name+" ") {
					return strings.TrimPrefix(l, name+" ")
				}
			}
			return ""
		}
		if d := doc(); d.Role != "leader" || d.Term != 1 || d.Leader != "w1" || d.LeaseDuration != "15s" {
			t.Fatalf("/status = %+v, want leader w1 term 1", d)
		}
		if v := metric("blobleader_is_leader"); v != "1" {
			t.Fatalf("blobleader_is_leader = %q, want 1", v)
		}
		if v := metric("blobleader_transitions_total"); v != "1" {
			t.Fatalf("blobleader_transitions_total = %q, want 1", v)
		}
		// Storage stops answering renews: at the deadline (10s after the
		// acquire) both endpoints must stop claiming leadership.
		lock.SetFault(func(ctx context.Context, op string) error { <-ctx.Done(); return ctx.Err() })
		time.Sleep(10*time.Second - time.Millisecond)
		if d := doc(); d.Role != "leader" {
			t.Fatalf("role %q 1ms before the deadline, want leader", d.Role)
		}
		time.Sleep(time.Millisecond)
		if d := doc(); d.Role == "leader" {
			t.Fatalf("/status still says leader at the renew deadline")
		}
		if v := metric("blobleader_is_leader"); v != "0" {
			t.Fatalf("blobleader_is_leader = %q at the deadline, want 0", v)
		}
		for _, p := range []string{"/healthz", "/readyz"} {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest("GET", p, nil))
			if rec.Code != 200 {
				t.Fatalf("%s = %d (%s) for a live elector", p, rec.Code, rec.Body)
			}
		}
	})
}
