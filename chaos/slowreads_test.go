package chaos

import (
	"io"
	"testing"
	"time"

	"github.com/blobleader/blobleader/worker/stalltest"
)

func TestSlowReads_SlowsOnlyTheChosenBlobsReads(t *testing.T) {
	stalltest.Run(t, func(t *testing.T, sp *stalltest.Probe) {
		direct, hp := fixtureHTTP(t)
		for _, name := range []string{"leader-shards/reports/w1", "leader-shards/assignment"} {
			if err := put(direct, name, 5*time.Second); err != nil {
				t.Fatal(err)
			}
		}
		via := containerVia(t, hp.Addr(), containerNameOf(direct))
		read := func(name string) time.Duration {
			t.Helper()
			start := time.Now()
			resp, err := via.NewBlobClient(name).DownloadStream(ctxT(t, 5*time.Second), nil)
			if err != nil {
				t.Fatalf("read %s: %v", name, err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if string(b) != "x" {
				t.Fatalf("read %s = %q, want the blob's content", name, b)
			}
			return time.Since(start)
		}
		f := &SlowReads{Prefix: "leader-shards/reports/", Delay: 400, Proxy: hp}
		if f.Kind() != KindSlowReads || f.Target() != hp.Name() {
			t.Fatalf("kind %q target %q", f.Kind(), f.Target())
		}
		if err := f.Inject(ctxT(t, time.Second)); err != nil {
			t.Fatal(err)
		}
		if d := read("leader-shards/reports/w1"); d < 400*time.Millisecond {
			t.Fatalf("a report read answered after %v, want ≥ 400 ms", d)
		}
		// Untouched, a read is far below the 400 ms delay; 300 ms plus the
		// machine's measured stall tells the two apart.
		if start := time.Now(); !sp.Bound(t, "another blob's read, which must be untouched (bound 300 ms)", start, 300*time.Millisecond, start.Add(read("leader-shards/assignment"))) {
			return
		}
		if f.Slowed() != 1 {
			t.Fatalf("slowed %d reads, want 1", f.Slowed())
		}
		if err := f.Remove(ctxT(t, time.Second)); err != nil {
			t.Fatal(err)
		}
		if start := time.Now(); !sp.Bound(t, "a report read after Remove (bound 300 ms)", start, 300*time.Millisecond, start.Add(read("leader-shards/reports/w1"))) {
			return
		}
		if err := (&SlowReads{Delay: 1, Proxy: hp}).Inject(ctxT(t, time.Second)); err == nil {
			t.Fatal("a fault without a prefix was accepted")
		}
		if err := (&SlowReads{Prefix: "x", Proxy: hp}).Inject(ctxT(t, time.Second)); err == nil {
			t.Fatal("a zero delay was accepted")
		}
	})
}
