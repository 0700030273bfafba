package shard

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/blobleader/blobleader/worker/election/bloblock"
	"github.com/blobleader/blobleader/worker/stalltest"
	"github.com/blobleader/blobleader/worker/storage"
)

// cutTransport is one worker's link to storage: it can be cut (every request
// fails, as for a crashed or partitioned worker), its assignment reads alone
// can be made to fail (its view goes stale while its leases stay renewed),
// and it remembers, per blob, when the last successful acquire or renew was
// sent.
type cutTransport struct {
	cut       atomic.Bool
	noReads   atomic.Bool
	mu        sync.Mutex
	lastRenew map[string]time.Time // blob path → send time of its last successful acquire or renew
}

func (ct *cutTransport) Do(req *http.Request) (*http.Response, error) {
	if ct.cut.Load() {
		return nil, errors.New("test: link to storage cut")
	}
	if ct.noReads.Load() && storage.Op(req.Context()) == "assignment_read" {
		return nil, errors.New("test: assignment reads fail")
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
	stalltest.RunWith(t, probeConfig(), func(t *testing.T, p *stalltest.Probe) {
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
		for _, s := range lost {
			var by string
			var at time.Time
			waitFor(t, fmt.Sprintf("shard %d of cut-off %s owned again", s, victim.id), bound+5*time.Second-time.Since(cutAt), func() (bool, string) {
				by, at = tr.current(s)
				return by != "" && by != victim.id, fmt.Sprintf("owner %q, %v after the cut", by, time.Since(cutAt).Round(time.Millisecond))
			})
			// Read after the takeover: a renew in flight at the cut may still
			// have succeeded.
			last := link.renewedAt(Layout{Blob: "leader"}.Shard(s))
			if last.IsZero() {
				t.Fatalf("shard %d: no successful acquire or renew by %s was recorded", s, victim.id)
			}
			// at is when the new owner's task started: after its acquisition.
			if p.Bound(t, fmt.Sprintf("shard %d owned again by %s after %s's last renew (bound L + P·1.1 + ε)", s, by, victim.id), last, bound, at) {
				t.Logf("shard %d: owned again by %s %v after the last renew (bound %v)", s, by, at.Sub(last).Round(time.Millisecond), bound)
			}
		}
		if got := victim.w.Owned(); len(got) != 0 {
			t.Errorf("cut-off %s still claims shards %v past their leases' expiry", victim.id, got)
		}
		waitSettled(t, n, rest, 30*time.Second)
	})
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
	var leader *poolMember
	waitFor(t, fmt.Sprintf("one of %d members to lead", len(ms)), timeout, func() (bool, string) {
		for _, m := range ms {
			if m.el.IsLeader() {
				leader = m
				return true, ""
			}
		}
		return false, "no leader"
	})
	return leader
}

// A standby whose own view went stale and is fresh again warms up before it
// takes an expired shard lease (after an outage the owners, not their
// standbys, win theirs back), but a lease its owner released has nobody
// coming back for it: the standby takes it within P·1.1 + ε of the release,
// warming up or not — also when, under a load spike, the standbys'
// assignment reads failed seconds before the leave (docs/benchmarks.md §9).
func TestPool_StandbyWarmingUpTakesAReleasedShardAtOnce(t *testing.T) {
	t.Parallel()
	stalltest.RunWith(t, probeConfig(), func(t *testing.T, p *stalltest.Probe) {
		c := newContainer(t)
		tr := newTracker(t)
		const n = 4
		w1 := startMember(t, c, n, "w1", tr)
		waitLeader(t, []*poolMember{w1}, 30*time.Second)
		w2, link := startCuttable(t, containerName(c), n, "w2", tr)
		owner := waitSettled(t, n, []*poolMember{w1, w2}, 60*time.Second)
		var leaving []int
		for s, o := range owner {
			if o == w1.id {
				leaving = append(leaving, s)
			}
		}
		slices.Sort(leaving)

		// Only w2's assignment reads fail, until its view is stale; then they
		// succeed again and w2 warms up. Its own leases are renewed throughout.
		link.noReads.Store(true)
		waitView(t, w2, false, 30*time.Second)
		link.noReads.Store(false)
		waitView(t, w2, true, 30*time.Second)
		for _, s := range leaving {
			if err := w2.w.view.mayAcquire(s, time.Now()); !errors.Is(err, errWarmingUp) {
				t.Fatalf("precondition: expected w2 to be warming up as shard %d's standby; the gate says %v", s, err)
			}
		}

		w1.stop() // graceful: its shard tasks stop and their leases are released
		cfg := testElection("x")
		bound := cfg.RetryPeriod*11/10 + cfg.RequestTimeout() // a poll, then the acquire and the term write
		stopped := time.Now()
		for _, s := range leaving {
			var by string
			var at time.Time
			waitFor(t, fmt.Sprintf("shard %d released by %s owned by %s", s, w1.id, w2.id), cfg.LeaseDuration+10*time.Second-time.Since(stopped), func() (bool, string) {
				by, at = tr.current(s)
				return by == w2.id, fmt.Sprintf("owner %q", by)
			})
			freed := tr.released(s)
			if freed.IsZero() {
				t.Fatalf("shard %d: the graceful stop of %s left no %s", s, w1.id, EventShardLeaseReleased)
			}
			if p.Bound(t, fmt.Sprintf("shard %d owned again by %s after %s released it (bound P·1.1 + ε)", s, by, w1.id), freed, bound, at) {
				t.Logf("shard %d: owned again by %s %v after the release (bound %v)", s, by, at.Sub(freed).Round(time.Millisecond), bound)
			}
		}
	})
}

// waitView waits until m's view of the assignment is fresh (or stale).
func waitView(t *testing.T, m *poolMember, fresh bool, timeout time.Duration) {
	t.Helper()
	waitFor(t, fmt.Sprintf("%s's view fresh=%v", m.id, fresh), timeout, func() (bool, string) {
		_, f := m.w.view.current(time.Now())
		return f == fresh, fmt.Sprintf("fresh=%v", f)
	})
}

// The other half of the warm-up rule: a storage outage for everyone that
// outlasts L lets every shard lease expire and every view go stale. The
// owners take their shards back, even those whose link heals a little later;
// their standbys, warming up, leave the expired leases to them, so the
// outage moves nothing.
func TestPool_OutageForEveryoneMovesNothing(t *testing.T) {
	t.Parallel()
	c := newContainer(t)
	tr := newTracker(t)
	const n = 4
	w1, l1 := startCuttable(t, containerName(c), n, "w1", tr)
	waitLeader(t, []*poolMember{w1}, 30*time.Second)
	w2, l2 := startCuttable(t, containerName(c), n, "w2", tr)
	ms := []*poolMember{w1, w2}
	before := waitSettled(t, n, ms, 60*time.Second)
	mark := tr.mark()

	l1.cut.Store(true)
	l2.cut.Store(true)
	cfg := testElection("x")
	// Hold the outage until every shard lease has expired at storage: L past
	// the last successful renew of any of them (sent before the cut).
	var last time.Time
	for s := range n {
		for _, l := range []*cutTransport{l1, l2} {
			if at := l.renewedAt(Layout{Blob: "leader"}.Shard(s)); at.After(last) {
				last = at
			}
		}
	}
	time.Sleep(time.Until(last.Add(cfg.LeaseDuration + time.Second))) // the outage's length, not a wait on an event
	for _, m := range ms {
		if got := m.w.Owned(); len(got) != 0 {
			t.Fatalf("%s still claims shards %v after their leases expired in the outage", m.id, got)
		}
	}
	// The standby's side heals first: a standby that did not warm up would
	// take the owner's expired leases in the meantime.
	l2.cut.Store(false)
	time.Sleep(6 * cfg.RetryPeriod) // the uneven heal (a fault shape), well inside memberGrace
	l1.cut.Store(false)
	after := waitSettled(t, n, ms, 60*time.Second)
	if got := tr.movesSince(mark); got != 0 {
		t.Fatalf("the outage moved %d shards; the owners should have won theirs back (before %v, after %v)", got, before, after)
	}
}
