package chaos

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/blobleader/blobleader/worker/stalltest"
)

func TestReset_ResetsConnectionsUntilRemoved(t *testing.T) {
	stalltest.Run(t, func(t *testing.T, sp *stalltest.Probe) {
		direct, px := fixtureStorage(t)
		via := containerVia(t, px.Addr(), containerNameOf(direct))

		f := &Reset{Proxy: px}
		if err := f.Inject(ctxT(t, 5*time.Second)); err != nil {
			t.Fatal(err)
		}
		for i := range 5 {
			d, err := timedProbe(via, 3*time.Second)
			if err == nil {
				t.Fatalf("probe %d succeeded through a reset toxic", i)
			}
			if errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("probe %d: %v after %v, want a fast connection error, not a timeout", i, err, d)
			}
			if end := time.Now(); !sp.Bound(t, fmt.Sprintf("probe %d's connection error (bound 1 s, its own timeout 3 s)", i), end.Add(-d), time.Second, end) {
				return
			}
		}
		if err := f.Remove(ctxT(t, 5*time.Second)); err != nil {
			t.Fatal(err)
		}
		if err := eventually(ctxT(t, 5*time.Second), via); err != nil {
			t.Fatal(err)
		}
	})
}

func TestReset_ToxicityHitsOnlySomeConnections(t *testing.T) {
	direct, px := fixtureStorage(t)
	name := containerNameOf(direct)

	f := &Reset{Toxicity: 0.5, Stream: Upstream, Proxy: px}
	if err := f.Inject(ctxT(t, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	// A fresh connection per try, so each try rolls the dice.
	via := containerFresh(t, px.Addr(), name)
	ok, failed := 0, 0
	for range 40 {
		if _, err := timedProbe(via, 3*time.Second); err == nil {
			ok++
		} else {
			failed++
		}
	}
	if ok == 0 || failed == 0 {
		t.Fatalf("toxicity 0.5: %d ok, %d reset; want some of each", ok, failed)
	}
	if err := f.Remove(ctxT(t, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
}

func TestReset_RerollHitsConnectionsThatSurvived(t *testing.T) {
	direct, px := fixtureStorage(t)
	via := containerVia(t, px.Addr(), containerNameOf(direct)) // one pooled connection

	f := &Reset{Toxicity: 0.5, Proxy: px}
	if err := f.Inject(ctxT(t, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	// Keep the connection that survives the first roll, then reroll: over a
	// few rolls that same pooled connection must be hit at least once.
	hit := false
	for range 30 {
		if _, err := timedProbe(via, 3*time.Second); err != nil {
			hit = true
			break
		}
		if err := f.Reroll(ctxT(t, 5*time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	if !hit {
		t.Fatal("30 rerolls at toxicity 0.5 never reset the pooled connection")
	}
	if got := len(px.Toxics()); got != 2 {
		t.Fatalf("%d toxics after rerolls, want 2 (one per stream)", got)
	}
	if err := f.Remove(ctxT(t, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := f.Reroll(ctxT(t, time.Second)); err != nil || len(px.Toxics()) != 0 {
		t.Fatalf("reroll after Remove: %v, toxics %v; want a no-op", err, px.Toxics())
	}
}
