package azuritetest

import (
	_ "embed"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// gcInterval is how long Azurite's blob garbage collector waits between
// sweeps in a server started here: longer than any test, demo or bench run.
//
// Why: Azurite sweeps every 10 minutes by default, on Node's only thread,
// and the sweep removes every unreferenced extent (every overwritten blob's
// old data) one by one from the collection of all extents, never giving the
// thread back to requests in between: it grows with the blobs ever written,
// about as their square. Measured here, one sweep after N overwrites of
// ten 200-byte blobs blocked every request for 2.2 s (N = 2000), 9.7 s
// (4000) and 45.8 s (8000). In a 10-minute
// shard soak (`make chaos`) the server answered no request from anyone for
// 9 s at exactly 10 minutes of age; the workers' requests all timed out and
// the checker reported a shard failover 24 s late (issue 23's seed
// failures). Real storage has no such pause, and a harness whose storage
// stops answering on its own judges the system by a fault nobody injected.
// Without sweeps the in-memory server keeps overwritten blob data until it
// stops: megabytes over a test's life.
//
// It must stay below Node's timer limit (2^31-1 ms, about 24.8 days):
// Node runs a longer timeout after 1 ms, which would sweep continuously.
const gcInterval = 24 * time.Hour

//go:embed nogc.cjs
var noGCPreload []byte

// withGCInterval returns env with the preload that sets Azurite's GC
// interval to gcInterval, and the preload's file, which the caller removes
// once the server has started (node reads it at start only).
func withGCInterval(env []string) (_ []string, preload string, err error) {
	f, err := os.CreateTemp("", "azuritetest-gc-*.cjs")
	if err != nil {
		return nil, "", fmt.Errorf("azurite: write the GC preload: %w", err)
	}
	if _, err = f.Write(noGCPreload); err == nil {
		err = f.Close()
	}
	if err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, "", fmt.Errorf("azurite: write the GC preload: %w", err)
	}
	opts := "--require " + strconv.Quote(f.Name())
	var out []string
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "NODE_OPTIONS="); ok {
			opts = v + " " + opts
			continue
		}
		if strings.HasPrefix(kv, "BLOBLEADER_AZURITE_GC_INTERVAL_MS=") {
			continue
		}
		out = append(out, kv)
	}
	out = append(out, "NODE_OPTIONS="+opts, "BLOBLEADER_AZURITE_GC_INTERVAL_MS="+strconv.FormatInt(gcInterval.Milliseconds(), 10))
	return out, f.Name(), nil
}
