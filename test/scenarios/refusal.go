package scenarios

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/blobleader/blobleader/chaos"
	"github.com/blobleader/blobleader/test/checker"
	"github.com/blobleader/blobleader/test/cluster"
)

// StorageRefusesTheLeader: storage answers the leader, but never as the
// election expects — every request refused with 400 InvalidHeaderValue, what
// an Azurite started without --skipApiVersionCheck answers
// (docs/architecture.md#the-election, "Expected answers").
var StorageRefusesTheLeader = Scenario{Name: "StorageRefusesTheLeader", Workers: 3, Run: refusedLeader,
	Requires: hitAndFailover(checker.FaultRefusal)}

// Its renews are refused, so it steps down by its deadline, and a follower
// takes over once the lease expires (the checker holds it to L1, as for a
// partition); and it says why in its own words: its /readyz names the
// refusal once L has passed without an answer it expected.
func refusedLeader(t *testing.T, c cluster.Cluster) {
	p := c.Params()
	ref := &chaos.Refusal{Op: chaos.OpAny, Status: http.StatusBadRequest, Code: "InvalidHeaderValue",
		Message: "The API version is not supported by this storage."}
	old, at := hitLeader(t, c, ref)
	waitNotLeader(t, old, p.RenewDeadline+time.Second)
	waitLeader(t, c, takeover(p), old.Identity())
	readyNames(t, old, "400 InvalidHeaderValue: The API version is not supported", at.Add(p.LeaseDuration+slack))
	if rs := ref.Refused(); len(rs) == 0 {
		t.Fatalf("%s: no request refused: the fault missed", old.Identity())
	}
	remove(t, c, ref)
	waitLeader(t, c, slack)
}

// readyNames waits until w's /readyz is 503 with want in its body, and fails
// t with what it said if that has not happened by deadline.
func readyNames(t *testing.T, w cluster.Worker, want string, deadline time.Time) {
	t.Helper()
	pr, ok := w.(cluster.Prober)
	if !ok {
		t.Fatalf("the backend's worker %T cannot be probed", w)
	}
	for {
		code, body, err := pr.Probe(ctxFor(t, 5*time.Second), "/readyz")
		if err == nil && code == http.StatusServiceUnavailable && strings.Contains(body, want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: /readyz = %d %q (%v); want 503 naming %q", w.Identity(), code, strings.TrimSpace(body), err, want)
		}
		hold(t, 200*time.Millisecond) // polling HTTP: no event to await across processes
	}
}
