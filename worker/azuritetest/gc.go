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
// sweeps in a server started here: longer than any test, demo or bench run,
// so that no server sweeps during its life. A sweep runs on Node's only
// thread and answers no request until it ends, for seconds once many blobs
// have been overwritten: storage that stops answering on its own would be
// a fault nobody injected (docs/chaos.md#running). Without sweeps the
// in-memory server keeps overwritten blob data until it stops.
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
