package shard

import (
	"errors"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/blobleader/blobleader/worker/election/bloblock"
	"github.com/blobleader/blobleader/worker/storage"
)

// cutTransport is one worker's link to storage: it can be cut (every request
// fails, as for a crashed or partitioned worker) and it remembers, per blob,
// when the last successful acquire or renew was sent.
type cutTransport struct {
	cut       atomic.Bool
	mu        sync.Mutex
	lastRenew map[string]time.Time // blob path → send time of its last successful acquire or renew
}

func (ct *cutTransport) Do(req *http.Request) (*http.Response, error) {
	if ct.cut.Load() {
		return nil, errors.New("test: link to storage cut")
	}
	sent := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err == nil && resp.StatusCode < 300 && (storage.Op(req.Context()) == "renew" || storage.Op(req.Context()) == "acquire") {
		ct.mu.Lock()
		ct.lastRenew[req.URL.Path] = sent
		ct.mu.Unlock()
	}
	return resp, err
}

func (ct *cutTransport) renewedAt(blobSuffix string) time.Time {
	ct.mu.Lock()
	defer ct.mu.Unlock()
	for p, t := range ct.lastRenew {
		if strings.HasSuffix(p, blobSuffix) {
			return t
		}
	}
	return time.Time{}
}

// startCuttable starts a member whose storage link the test can cut.
func startCuttable(t *testing.T, name string, n int, id string, tr *tracker) (*poolMember, *cutTransport) {
	t.Helper()
	ct := &cutTransport{lastRenew: map[string]time.Time{}}
	c, err := bloblock.NewContainerClient(bloblock.ClientConfig{
		ConnectionString: server.ConnectionString(), Container: name, RequestTimeout: 2 * time.Second, Transport: ct,
	})
	if err != nil {
		t.Fatal(err)
	}
	return startMember(t, c, n, id, tr), ct
}

func containerName(c *container.Client) string {
	u := strings.TrimSuffix(c.URL(), "/")
	return u[strings.LastIndex(u, "/")+1:]
}

// A follower cut off from storage (to storage, a crash) loses its shards:
// each is owned again by another member within L + P·1.1 + ε of that
// member's last successful renew of the shard, its own task stops at its
// renew deadline first (the tracker fails on any overlap), and the shards
// end balanced over the two members left.
func TestPool_CutOffFollowersShardsFailOver(t *testing.T) {
	t.Parallel()
	c := newContainer(t)
	tr := newTracker(t)
	const n = 6
	ms := []*poolMember{startMember(t, c, n, "w1", tr), startMember(t, c, n, "w2", tr)}
	// The victim joins once another member leads, so it is a follower.
	waitLeader(t, ms, 30*time.Second)
	victim, link := startCuttable(t, containerName(c), n, "w3", tr)
	ms = append(ms, victim)
	owner := waitSettled(t, n, ms, 60*time.Second)
	if victim.el.IsLeader() {
		t.Fatal("expected w3, which joined under a leader, to follow")
	}
	var lost []int
	for s, o := range owner {
		if o == victim.id {
			lost = append(lost, s)
		}
	}
	link.cut.Store(true)
	cutAt := time.Now()

	cfg := testElection("x")
	eps := cfg.RequestTimeout() // the acquire and the term write after a successful poll
	bound := cfg.LeaseDuration + cfg.RetryPeriod*11/10 + eps
	rest := ms[:2]
	deadline := time.Now().Add(bound + 5*time.Second)
	for _, s := range lost {
		var by string
		var at time.Time
		for time.Now().Before(deadline) {
			if by, at = tr.current(s); by != "" && by != victim.id {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		if by == "" || by == victim.id {
			t.Fatalf("shard %d of cut-off %s was not owned again within %v of the cut", s, victim.id, time.Since(cutAt))
		}
		// Read after the takeover: a renew in flight at the cut may still
		// have succeeded.
		last := link.renewedAt(Layout{Blob: "leader"}.Shard(s))
		if last.IsZero() {
			t.Fatalf("shard %d: no successful acquire or renew by %s was recorded", s, victim.id)
		}
		// at is when the new owner's task started: after its acquisition.
		if took := at.Sub(last); took > bound {
			t.Errorf("shard %d owned again by %s %v after %s's last renew; bound L + P·1.1 + ε = %v", s, by, took, victim.id, bound)
		} else {
			t.Logf("shard %d: owned again by %s %v after the last renew (bound %v)", s, by, took.Round(time.Millisecond), bound)
		}
	}
	if got := victim.w.Owned(); len(got) != 0 {
		t.Errorf("cut-off %s still claims shards %v past their leases' expiry", victim.id, got)
	}
	waitSettled(t, n, rest, 30*time.Second)
}

func containsInt(xs []int, x int) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// waitLeader waits until one of ms leads the election.
func waitLeader(t *testing.T, ms []*poolMember, timeout time.Duration) *poolMember {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		for _, m := range ms {
			if m.el.IsLeader() {
				return m
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("expected one of %d members to lead within %v", len(ms), timeout)
	return nil
}
