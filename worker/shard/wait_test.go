package shard

import (
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/blobleader/blobleader/worker/election/bloblock"
	"github.com/blobleader/blobleader/worker/stalltest"
)

// The package's tests run whole pools against one Azurite (TestMain), a
// single Node event loop. On a busy machine it is starved before the tests
// are: under stress-ng it got a tenth of a core and answered seconds late
// while the CPU probe woke nearly on time. So the tests measure it, and
// read it in two ways (docs/chaos.md#a-busy-machine):
//
//   - every wait lasts its timeout plus the stall the CPU and storage
//     probes measured meanwhile (waitFor): a pool that a starved Azurite
//     could not serve is not mistaken for a pool that never settles;
//   - the test's own reads and writes of the pool's blobs go through an
//     operator's client (operator), as `az storage blob …` would: no design
//     rule bounds them, and a slow answer must not end the test's set-up or
//     its checks. The members keep the request timeout the design gives.
//
// Safety never reads the probe: the tracker fails on two tasks of a shard
// at once, and term and fencing checks are judged as they are.

var (
	machineOnce  sync.Once
	machineProbe *stalltest.Probe
)

// probeConfig is a probe of this machine and of the package's Azurite.
func probeConfig() stalltest.Config {
	cfg := stalltest.Default
	cfg.Server = server.BlobEndpoint()
	return cfg
}

// machine is the package's probe, started by the first test that reads it
// and running until the test binary exits.
func machine() *stalltest.Probe {
	machineOnce.Do(func() { machineProbe = stalltest.Start(probeConfig()) })
	return machineProbe
}

// waitFor is the package probe's Await (stalltest): a wait lasting its
// timeout plus the CPU and storage stall measured meanwhile, at most 3×,
// then inconclusive — never a pass.
func waitFor(t *testing.T, what string, timeout time.Duration, cond func() (bool, string)) {
	t.Helper()
	machine().Await(t, what, timeout, cond)
}

// operatorTimeout bounds one try of the test's own storage calls: long
// enough to measure a long stall whole, as the harness's storage probe is.
const operatorTimeout = 30 * time.Second

// operator returns a client of c's container for the test's own reads and
// writes (an operator's tool, not a member).
func operator(t *testing.T, c *container.Client) *container.Client {
	t.Helper()
	op, err := bloblock.NewContainerClient(bloblock.ClientConfig{
		ConnectionString: server.ConnectionString(), Container: containerName(c), RequestTimeout: operatorTimeout,
	})
	if err != nil {
		t.Fatalf("NewContainerClient: %v", err)
	}
	return op
}

// Checks that only a starved member can fail are judged against the
// attempt's probe (stalltest.RunWith), with the least stall that could
// explain the failure under testElection's timing:
//
//   - leaseLapse: a holder loses a lease (and so a shard moves, or the
//     coordinator's term ends) only when no renew was answered for its renew
//     deadline D, renews being sent every renew interval: D − RI;
//   - oneFailedRead: a view goes stale over a corruption only when one more
//     read fails than the TTL tolerates (the corrupt read is the one it
//     does): a storage stall of one request timeout.
func leaseLapse() time.Duration {
	cfg := testElection("x")
	return cfg.RenewDeadline - cfg.RenewInterval
}

func oneFailedRead() time.Duration { return testElection("x").RequestTimeout() }

// judgeStarved ends t for a check that failed: inconclusive (retried under
// RunWith) when p measured at least need of stall in [from, now], a
// failure otherwise.
func judgeStarved(t *testing.T, p *stalltest.Probe, what string, from time.Time, need time.Duration) {
	t.Helper()
	p.Starved(t, what, from, time.Now(), need)
	t.FailNow()
}
