package shard

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/blobleader/blobleader/worker/azuritetest"
	"github.com/blobleader/blobleader/worker/election"
	"github.com/blobleader/blobleader/worker/election/bloblock"
	"github.com/blobleader/blobleader/worker/stalltest"
)

// These tests run whole pools of in-process workers against a real Azurite
// that TestMain starts and stops; each test uses its own container.

var server *azuritetest.Server

func TestMain(m *testing.M) { azuritetest.RunMain(m, &server) }

var containerSeq atomic.Int64

func newContainer(t *testing.T) *container.Client {
	t.Helper()
	name := fmt.Sprintf("s%d-%d", time.Now().UnixNano()%1e9, containerSeq.Add(1))
	c, err := bloblock.NewContainerClient(bloblock.ClientConfig{
		ConnectionString: server.ConnectionString(), Container: name, RequestTimeout: 2 * time.Second,
	})
	if err != nil {
		t.Fatalf("NewContainerClient: %v", err)
	}
	return c
}

// tracker watches every shard task of a test pool: it fails on two tasks of
// one shard running at once, and records each shard's owners in order.
type tracker struct {
	t       *testing.T
	mu      sync.Mutex
	running map[int]string
	owners  map[int][]string
	started map[int]time.Time // when each shard's latest task started
	freed   map[int]time.Time // when each shard's lease was last released at storage
	repairs map[string]int    // "object/cause" → repairs any member reported (OnRepair)
}

func newTracker(t *testing.T) *tracker {
	return &tracker{t: t, running: map[int]string{}, owners: map[int][]string{}, started: map[int]time.Time{}, freed: map[int]time.Time{},
		repairs: map[string]int{}}
}

// repaired is every member's OnRepair.
func (tr *tracker) repaired(object, cause string) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.repairs[object+"/"+cause]++
}

// repairCount returns how many repairs of object for cause were reported.
func (tr *tracker) repairCount(object, cause string) int {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return tr.repairs[object+"/"+cause]
}

// event is every member's OnEvent: it records the lease releases.
func (tr *tracker) event(ev Event) {
	if ev.Kind != EventShardLeaseReleased {
		return
	}
	tr.mu.Lock()
	tr.freed[ev.Shard] = ev.Time
	tr.mu.Unlock()
}

// released returns when shard s's lease was last released at storage.
func (tr *tracker) released(s int) time.Time {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return tr.freed[s]
}

func (tr *tracker) task(id string) func(ctx context.Context, s int, term int64) error {
	return func(ctx context.Context, s int, term int64) error {
		tr.mu.Lock()
		if other := tr.running[s]; other != "" {
			tr.t.Errorf("shard %d: %s started its task (term %d) while %s's still runs", s, id, term, other)
		}
		tr.running[s] = id
		tr.started[s] = time.Now()
		if os := tr.owners[s]; len(os) == 0 || os[len(os)-1] != id {
			tr.owners[s] = append(tr.owners[s], id)
		}
		tr.mu.Unlock()
		<-ctx.Done()
		tr.mu.Lock()
		if tr.running[s] == id {
			delete(tr.running, s)
		}
		tr.mu.Unlock()
		return nil
	}
}

// current returns shard s's running owner and when its task started.
func (tr *tracker) current(s int) (string, time.Time) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return tr.running[s], tr.started[s]
}

// moves counts owner changes per shard since the marks were taken.
func (tr *tracker) mark() map[int]int {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	m := map[int]int{}
	for s, os := range tr.owners {
		m[s] = len(os)
	}
	return m
}

func (tr *tracker) movesSince(mark map[int]int) int {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	k := 0
	for s, os := range tr.owners {
		k += len(os) - max(mark[s], 1)
	}
	return k
}

// poolMember is one in-process worker: an election contender whose leader
// task coordinates, and a shard worker.
type poolMember struct {
	id     string
	w      *Worker
	el     *election.Elector
	cancel context.CancelFunc
	done   chan struct{}
}

func testElection(id string) election.Config {
	cfg := election.DefaultConfig(id)
	cfg.RetryPeriod = 500 * time.Millisecond
	cfg.ShutdownGrace = 2 * time.Second
	return cfg
}

func startMember(t *testing.T, c *container.Client, n int, id string, tr *tracker) *poolMember {
	t.Helper()
	w, err := New(Config{Shards: n, Election: testElection(id), Container: c, Blob: "leader", Task: tr.task(id), OnEvent: tr.event, OnRepair: tr.repaired})
	if err != nil {
		t.Fatal(err)
	}
	lock, err := bloblock.New(c, "leader")
	if err != nil {
		t.Fatal(err)
	}
	m := &poolMember{id: id, w: w, done: make(chan struct{})}
	m.el, err = election.NewElector(testElection(id), lock, election.Callbacks{
		OnStartedLeading: func(ctx context.Context, term int64) error { return w.Lead(ctx, term, m.el.IsLeader) },
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	m.cancel = cancel
	go func() {
		defer close(m.done)
		var wg sync.WaitGroup
		wg.Go(func() { _ = m.el.Run(ctx) })
		wg.Go(func() { _ = w.Run(ctx) })
		wg.Wait()
	}()
	t.Cleanup(m.stop)
	return m
}

func (m *poolMember) stop() {
	m.cancel()
	<-m.done
}

// waitSettled waits until the members own ⌊N/M⌋ or ⌈N/M⌉ shards each, all N
// in all, and the leader's assignment matches and names a standby for each.
// It is a wait, not a bound (the balance's bound is the shard checker's):
// waitFor stretches it by the stall measured meanwhile.
func waitSettled(t *testing.T, n int, ms []*poolMember, timeout time.Duration) map[int]string {
	t.Helper()
	var owner map[int]string
	waitFor(t, fmt.Sprintf("%d shards balanced over %d members", n, len(ms)), timeout, func() (bool, string) {
		owner = map[int]string{}
		counts := map[string]int{}
		total := 0
		var leader *Assignment
		for _, m := range ms {
			for _, s := range m.w.Owned() {
				owner[s] = m.id
				counts[m.id]++
				total++
			}
			if a := m.w.Assignment(); a != nil {
				leader = a
			}
		}
		ok := total == n && len(owner) == n && leader != nil
		q := n / len(ms)
		for _, m := range ms {
			ok = ok && (counts[m.id] == q || counts[m.id] == q+1)
		}
		for s := 0; ok && s < n; s++ {
			ok = leader.Owners[s] == owner[s] && (len(ms) == 1 || leader.Standbys[s] != "")
		}
		return ok, fmt.Sprintf("counts %v, total %d, leader's assignment %+v", counts, total, leader)
	})
	return owner
}

func TestPool_BalancesMovesOnlyWhatBalanceRequires(t *testing.T) {
	t.Parallel()
	stalltest.RunWith(t, probeConfig(), func(t *testing.T, p *stalltest.Probe) { balancesMovesOnlyWhatBalanceRequires(t, p) })
}

// A move beyond what balance requires is a holder that lost a lease it was
// renewing: judged against the stall since the mark (leaseLapse).
func balancesMovesOnlyWhatBalanceRequires(t *testing.T, p *stalltest.Probe) {
	c := newContainer(t)
	tr := newTracker(t)
	const n = 8
	ms := []*poolMember{startMember(t, c, n, "w1", tr), startMember(t, c, n, "w2", tr), startMember(t, c, n, "w3", tr)}
	before := waitSettled(t, n, ms, 60*time.Second)

	// A graceful leave: the standbys take exactly the leaver's shards.
	mark, marked := tr.mark(), time.Now()
	gone := ms[2]
	lost := 0
	for _, o := range before {
		if o == gone.id {
			lost++
		}
	}
	stopped := time.Now()
	gone.stop()
	ms = ms[:2]
	after := waitSettled(t, n, ms, 30*time.Second)
	t.Logf("leave of %s (%d shards): balanced again %v after it stopped", gone.id, lost, time.Since(stopped).Round(time.Millisecond))
	if got := tr.movesSince(mark); got != lost {
		judgeStarved(t, p, fmt.Sprintf("the leave of %s moved %d shards; balance requires its %d", gone.id, got, lost), marked, leaseLapse())
	}

	// A join: the joiner receives its share, nothing else moves.
	mark, marked = tr.mark(), time.Now()
	ms = append(ms, startMember(t, c, n, "w4", tr))
	final := waitSettled(t, n, ms, 45*time.Second)
	got4 := 0
	for _, o := range final {
		if o == "w4" {
			got4++
		}
	}
	if got := tr.movesSince(mark); got != got4 || got4 != n/3 {
		judgeStarved(t, p, fmt.Sprintf("the join of w4 moved %d shards and gave it %d; balance requires %d (before %v, after %v)", got, got4, n/3, after, final), marked, leaseLapse())
	}
}

// A leader change alone moves nothing: the new leader adopts the plan.
func TestPool_LeaderChangeMovesNothing(t *testing.T) {
	t.Parallel()
	stalltest.RunWith(t, probeConfig(), func(t *testing.T, p *stalltest.Probe) { leaderChangeMovesNothing(t, p) })
}

// A changed plan or a move is a member that lost a lease it was renewing
// (its member lease, or a shard's): judged against the stall since the
// mark (leaseLapse).
func leaderChangeMovesNothing(t *testing.T, p *stalltest.Probe) {
	c := newContainer(t)
	tr := newTracker(t)
	const n = 6
	ms := []*poolMember{startMember(t, c, n, "w1", tr), startMember(t, c, n, "w2", tr), startMember(t, c, n, "w3", tr)}
	waitSettled(t, n, ms, 60*time.Second)
	var leader *poolMember
	for _, m := range ms {
		if m.el.IsLeader() {
			leader = m
		}
	}
	if leader == nil {
		t.Fatal("expected one member to lead")
	}
	a := leader.w.Assignment()
	mark, marked := tr.mark(), time.Now()
	// Break the election lease: the leader loses leadership at its next
	// renew; another member (or it) leads a new term.
	lock, err := bloblock.New(operator(t, c), "leader")
	if err != nil {
		t.Fatal(err)
	}
	if err := lock.Break(context.Background(), "", 0); err != nil {
		t.Fatal(err)
	}
	var b *Assignment
	waitFor(t, "an assignment from a newer term after the break", 30*time.Second, func() (bool, string) {
		for _, m := range ms {
			if x := m.w.Assignment(); x != nil && x.Term > a.Term {
				b = x
			}
		}
		return b != nil, fmt.Sprintf("the plan of term %d", a.Term)
	})
	if !slices.Equal(b.Owners, a.Owners) {
		judgeStarved(t, p, fmt.Sprintf("the new leader (term %d) changed the plan:\n%v\nwas\n%v", b.Term, b.Owners, a.Owners), marked, leaseLapse())
	}
	waitSettled(t, n, ms, 10*time.Second)
	if got := tr.movesSince(mark); got != 0 {
		judgeStarved(t, p, fmt.Sprintf("a leader change alone moved %d shards", got), marked, leaseLapse())
	}
}
