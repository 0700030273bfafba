package chaos

import (
	"testing"
	"time"
)

// The fixture's heartbeat is the evidence half of this package's tests
// stand on: "frozen := p.beats()" then "it did not move", or "it moved past
// p.beats()". A reading caught between the writer's truncate and its write
// would be taken for a heartbeat of -1, and so for a frozen process that
// "kept beating" (a false failure) or a stopped one that "beats on" (a
// false pass). Read it as fast as this process can for a second, beside
// the writer: no reading may be torn or go backwards.
func TestFixture_HeartbeatIsNeverReadTorn(t *testing.T) {
	p := startFixture(t, "graceful")
	// At least a second and 20 beats: a starved fixture beats slower, which
	// is no verdict; the 30 s is the wait's deadline.
	last, reads, torn := p.beats(), 0, 0
	began := time.Now()
	for ; time.Since(began) < time.Second || (last < 20 && time.Since(began) < 30*time.Second); reads++ {
		n := p.beats()
		if n < last {
			torn++
			if torn <= 3 {
				t.Errorf("reading %d: heartbeat %d after %d", reads, n, last)
			}
			continue
		}
		last = n
	}
	if last < 20 {
		t.Fatalf("the heartbeat reached only %d in %v of reading (one every 5 ms): the test saw too little to judge", last, time.Since(began).Round(time.Millisecond))
	}
	if torn > 0 {
		t.Fatalf("%d of %d readings of the heartbeat were torn or went backwards", torn, reads)
	}
	t.Logf("%d readings up to heartbeat %d: none torn", reads, last)
}
