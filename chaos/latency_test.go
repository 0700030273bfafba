package chaos

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/blobleader/blobleader/worker/stalltest"
)

func TestLatency_DelaysBothStreamsUntilRemoved(t *testing.T) {
	stalltest.Run(t, func(t *testing.T, sp *stalltest.Probe) {
		direct, px := fixtureStorage(t)
		via := containerVia(t, px.Addr(), containerNameOf(direct))
		if _, err := timedProbe(via, 5*time.Second); err != nil {
			t.Fatalf("baseline: %v", err)
		}

		f := &Latency{Latency: 300, Proxy: px}
		if err := f.Inject(ctxT(t, 5*time.Second)); err != nil {
			t.Fatal(err)
		}
		if got := len(px.Toxics()); got != 2 {
			t.Fatalf("%d toxics on the proxy, want one per stream (2)", got)
		}
		d, err := timedProbe(via, 5*time.Second)
		if err != nil {
			t.Fatalf("slow probe: %v", err)
		}
		if d < 600*time.Millisecond {
			t.Fatalf("round trip took %v, want ≥ 600 ms (300 ms each way)", d)
		}

		if err := f.Remove(ctxT(t, 5*time.Second)); err != nil {
			t.Fatal(err)
		}
		if got := px.Toxics(); len(got) != 0 {
			t.Fatalf("toxics left after Remove: %v", got)
		}
		// Removed: answered inside one way's 300 ms (judged with the stall
		// measured meanwhile).
		start := time.Now()
		if _, err := timedProbe(via, 5*time.Second); err != nil {
			t.Fatalf("after Remove: %v", err)
		}
		sp.Bound(t, "a round trip after Remove (bound 300 ms, one way's delay)", start, 300*time.Millisecond, time.Now())
	})
}

func TestLatency_RejectsBadParameters(t *testing.T) {
	_, px := fixtureStorage(t)
	for _, f := range []*Latency{
		{Latency: -1, Proxy: px},
		{Latency: 10, Jitter: 20, Proxy: px},
		{Latency: 10, Stream: "sideways", Proxy: px},
		{Latency: 10, Toxicity: 2, Proxy: px},
	} {
		if err := f.Inject(ctxT(t, time.Second)); !errors.Is(err, ErrInvalid) {
			t.Errorf("latency %d jitter %d stream %q toxicity %v: inject = %v, want ErrInvalid", f.Latency, f.Jitter, f.Stream, f.Toxicity, err)
		}
	}
	if got := px.Toxics(); len(got) != 0 {
		t.Fatalf("rejected faults left toxics: %v", got)
	}
	if err := (&Latency{Latency: 1}).Inject(ctxT(t, time.Second)); !errors.Is(err, ErrNoTarget) {
		t.Fatalf("latency without a proxy = %v, want ErrNoTarget", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := (&Latency{Latency: 1, Proxy: px}).Inject(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("inject with a cancelled context = %v, want context.Canceled", err)
	}
	if got := px.Toxics(); len(got) != 0 {
		t.Fatalf("cancelled inject left toxics: %v", got)
	}
}
