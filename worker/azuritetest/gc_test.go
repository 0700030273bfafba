package azuritetest

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/blobleader/blobleader/worker/stalltest"
)

// A server started here never sweeps during a test (gcInterval): this
// reads the interval Azurite's GC itself logs after its first (empty)
// sweep at start.
func TestStart_AzuriteGarbageCollectorNeverRunsDuringATest(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	port := ReservePort(t)
	debug := filepath.Join(t.TempDir(), "debug.log")
	s, err := startOnPort(ctx, port, Options{}, "--debug", debug)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()

	sleep := regexp.MustCompile(`BlobGCManager:markSweepLoop\(\) Sleep for (\d+)ms`)
	var m []string
	// Azurite's own log: a starved Azurite writes it late, so the wait
	// lasts 30 s plus the stall a probe of the machine and of this Azurite
	// measured meanwhile (stalltest's Probe.Await).
	cfg := stalltest.Default
	cfg.Server = s.BlobEndpoint()
	p := stalltest.Start(cfg)
	defer p.Stop()
	p.Await(t, "Azurite's GC logging its interval (debug log "+debug+")", 30*time.Second, func() (bool, string) {
		b, _ := os.ReadFile(debug)
		m = sleep.FindStringSubmatch(string(b))
		return m != nil, "\n" + tail(b)
	})
	ms, _ := strconv.ParseInt(m[1], 10, 64)
	if got := time.Duration(ms) * time.Millisecond; got < gcInterval {
		t.Fatalf("Azurite's GC runs again after %v: a test server living longer stops answering for the sweep; want ≥ %v", got, gcInterval)
	}
}

func tail(b []byte) string {
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return string(b)
}

// An azurite-blob whose layout the preload does not know ($AZURITE_BLOB set
// to another build) is refused with the reason, not started with the 10-minute
// stall.
func TestStart_RefusesAnAzuriteWhoseGCIntervalCannotBeSet(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "azurite-blob")
	if err := os.WriteFile(bin, []byte("#!/usr/bin/env node\nsetInterval(() => {}, 1000);\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("AZURITE_BLOB", bin)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := Start(ctx)
	if err == nil {
		s.Stop()
		t.Fatal("Start succeeded with an Azurite whose GC interval could not be set")
	}
	if !regexp.MustCompile(`cannot set Azurite's GC interval`).MatchString(err.Error()) {
		t.Fatalf("Start failed without naming the GC interval: %v", err)
	}
}
