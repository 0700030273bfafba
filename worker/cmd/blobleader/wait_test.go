package main

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/blobleader/blobleader/worker/azuritetest"
	"github.com/blobleader/blobleader/worker/stalltest"
)

// The package's tests run real workers against their own Azurites, many
// at once. On a busy machine the Node event loops are starved first: a
// leader loses its term to unanswered renews and a window the test awaits
// opens late (a busy CI run: `blobleader_shards_unowned … stayed 0 for 30s`
// while the leader's lines showed it lose and regain its term twice). So
// every wait here lasts its timeout plus the stall measured meanwhile
// (stalltest's Probe.Await, at most 3×, then inconclusive — a failure,
// never a pass), by one probe of this machine and of a stand-in Azurite: a
// Node process like the tests' own, asked one GET at a time
// (docs/chaos.md#a-busy-machine). Bounds the design states are judged
// where they are asserted; safety checks never read the probe.

var (
	machineOnce    sync.Once
	machineProbe   *stalltest.Probe
	machineAzurite *azuritetest.Server
	machineErr     error
)

// machine is the package's probe, started by the first wait and stopped by
// TestMain (stopMachine).
func machine(t *testing.T) *stalltest.Probe {
	t.Helper()
	machineOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		machineAzurite, machineErr = azuritetest.Start(ctx)
		if machineErr != nil {
			return
		}
		cfg := stalltest.Default
		cfg.Server = machineAzurite.BlobEndpoint()
		machineProbe = stalltest.Start(cfg)
	})
	if machineErr != nil {
		t.Fatalf("the waits' stand-in Azurite did not start: %v", machineErr)
	}
	return machineProbe
}

func stopMachine() {
	if machineProbe != nil {
		machineProbe.Stop()
	}
	if machineAzurite != nil {
		machineAzurite.Stop()
	}
}

// waitFor polls cond until it holds: timeout plus the measured stall.
func waitFor(t *testing.T, what string, timeout time.Duration, cond func() (bool, string)) {
	t.Helper()
	machine(t).Await(t, what, timeout, cond)
}
