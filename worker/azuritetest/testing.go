package azuritetest

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/blobleader/blobleader/worker/stalltest"
)

// startWait is how long StartT, StartWithT and RunMain wait for Azurite to
// answer, not counting the stall a CPU probe measures meanwhile: a start is
// a wait, not a bound of anything, and a machine that starves Node delays
// it without a defect of Azurite's or ours.
const startWait = 60 * time.Second

// startContext ends startWait plus the stall measured since it was made,
// with a cause saying so; its cancel ends it and its probe at once.
func startContext() (context.Context, context.CancelFunc) {
	p := stalltest.Start(stalltest.Default)
	began := time.Now()
	ctx, cancel := context.WithCancelCause(context.Background())
	go func() {
		defer p.Stop()
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case now := <-tick.C:
				if stall := p.StallIn(began, now); now.After(began.Add(startWait + stall)) {
					cancel(fmt.Errorf("not ready within %v plus the %v the machine stalled meanwhile (CPU probe)", startWait, stall.Round(time.Millisecond)))
					return
				}
			}
		}
	}()
	return ctx, func() { cancel(context.Canceled) }
}

// StartT starts Azurite for one test and stops it when the test ends.
func StartT(tb testing.TB) *Server {
	tb.Helper()
	return StartWithT(tb, Options{})
}

// StartWithT is StartT with opts.
func StartWithT(tb testing.TB, opts Options) *Server {
	tb.Helper()
	ctx, cancel := startContext()
	defer cancel()
	s, err := StartWith(ctx, opts)
	if err != nil {
		tb.Fatalf("this test needs Azurite: %v", err)
	}
	tb.Cleanup(s.Stop)
	return s
}

// RunMain is a TestMain for packages whose tests share one Azurite: it starts
// it, stores it in *s, runs the tests, stops it and exits. Without Azurite the
// package fails (it does not skip: a skipped storage test proves nothing).
func RunMain(m *testing.M, s **Server) {
	ctx, cancel := startContext()
	srv, err := Start(ctx)
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, "these tests need Azurite:", err)
		os.Exit(1)
	}
	*s = srv
	code := m.Run()
	srv.Stop()
	os.Exit(code)
}
