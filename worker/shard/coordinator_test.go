package shard

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/lease"

	"github.com/blobleader/blobleader/worker/election"
	"github.com/blobleader/blobleader/worker/election/bloblock"
	"github.com/blobleader/blobleader/worker/stalltest"
)

// slowTransport gives every request a round trip of at least delay (the
// delay is spent before sending, and honours the request's context), like
// storage far away or behind a slow link.
type slowTransport struct{ delay time.Duration }

func (st slowTransport) Do(req *http.Request) (*http.Response, error) {
	select {
	case <-time.After(st.delay):
	case <-req.Context().Done():
		return nil, req.Context().Err()
	}
	return http.DefaultClient.Do(req)
}

// The coordinator's progress signal must not be a whole pass over every
// member: with many members and slow storage (every round trip 1 s, below
// the 2 s request timeout, so not one renew fails) a pass that reads each
// member's report in turn takes members × latency, and its own watchdog
// (10 s, the worker's default) steps the leader down again and again. The
// leader must keep one term for the whole run and publish its summary.
// SLOW_MEMBERS (default 100) and SLOW_MEMBERS_RTT (default 1s) scale it.
func TestCoordinator_KeepsItsTermWithManySlowMembers(t *testing.T) {
	t.Parallel()
	stalltest.RunWith(t, probeConfig(), func(t *testing.T, p *stalltest.Probe) { keepsItsTermWithManySlowMembers(t, p) })
}

func keepsItsTermWithManySlowMembers(t *testing.T, p *stalltest.Probe) {
	members, rtt := 100, time.Second
	if v, err := strconv.Atoi(os.Getenv("SLOW_MEMBERS")); err == nil && v > 0 {
		members = v
	}
	if v, err := time.ParseDuration(os.Getenv("SLOW_MEMBERS_RTT")); err == nil && v > 0 {
		rtt = v
	}
	const observe = 40 * time.Second
	fast := operator(t, newContainer(t)) // the test's own writes: an operator's client
	layout := Layout{Blob: "leader"}
	ctx := context.Background()
	if _, err := fast.Create(ctx, nil); err != nil {
		t.Fatal(err)
	}
	// The lock blob exists (a first acquire that must also create it needs
	// four round trips in one request timeout).
	if err := uploadJSON(ctx, fast, "leader", struct{}{}); err != nil {
		t.Fatal(err)
	}
	setUp := time.Now()
	// 1. The fake members: a leased member blob and a report each, written
	// straight to storage (fast), as live followers would have.
	for i := range members {
		id := fmt.Sprintf("m%03d", i)
		if err := uploadJSON(ctx, fast, layout.Member(id), struct{}{}); err != nil {
			t.Fatal(err)
		}
		lc, err := lease.NewBlobClient(fast.NewBlobClient(layout.Member(id)), nil)
		if err != nil {
			t.Fatal(err)
		}
		// An infinite lease: the member stays one however long the set-up
		// and the leader's first acquire take (on a busy machine a 60 s
		// lease can lapse inside the window).
		if _, err := lc.AcquireLease(ctx, -1, nil); err != nil {
			t.Fatalf("lease member %s: %v", id, err)
		}
		r := Report{Identity: id, At: time.Now().UTC(), Shards: []ShardProgress{{Shard: i % 8, Term: 1, Seq: int64(i)}}}
		if err := uploadJSON(ctx, fast, layout.Report(id), r); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("%d fake members set up in %v", members, time.Since(setUp).Round(time.Millisecond))
	// 2. The leader: every storage call it makes takes rtt.
	slow, err := bloblock.NewContainerClient(bloblock.ClientConfig{
		ConnectionString: server.ConnectionString(), Container: containerName(fast), RequestTimeout: 2 * time.Second,
		Transport: slowTransport{delay: rtt},
	})
	if err != nil {
		t.Fatal(err)
	}
	cfg := testElection("leader-1")
	cfg.WatchdogTimeout = 10 * time.Second
	tr := newTracker(t)
	w, err := New(Config{Shards: 8, Election: cfg, Container: slow, Blob: "leader", Task: tr.task("leader-1"), OnEvent: tr.event})
	if err != nil {
		t.Fatal(err)
	}
	lock, err := bloblock.New(slow, "leader")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var started, stopped []election.Event
	var el *election.Elector
	el, err = election.NewElector(cfg, lock, election.Callbacks{
		OnStartedLeading: func(ctx context.Context, term int64) error { return w.Lead(ctx, term, el.IsLeader) },
		OnEvent: func(ev election.Event) {
			mu.Lock()
			defer mu.Unlock()
			switch ev.Kind {
			case election.EventStartedLeading:
				started = append(started, ev)
			case election.EventStoppedLeading:
				stopped = append(stopped, ev)
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { _ = el.Run(runCtx) })
	wg.Go(func() { _ = w.Run(runCtx) })
	defer func() { cancel(); wg.Wait() }()

	// 3. Lead, then hold for the observation window.
	// polling IsLeader: the elector has no wait API
	waitFor(t, fmt.Sprintf("leadership with %v round trips", rtt), 30*time.Second, func() (bool, string) { return el.IsLeader(), "following" })
	term := el.Status().Term
	from := time.Now()
	var firstSummary time.Duration
	fullest := 0 // the most reports one summary read
	for time.Since(from) < observe {
		time.Sleep(200 * time.Millisecond)
		if sum := w.Summary(); sum != nil {
			if firstSummary == 0 {
				firstSummary = time.Since(from)
			}
			fullest = max(fullest, len(sum.ReportedBy))
		}
	}
	held := time.Since(from)
	// The premise is storage within rtt of the request timeout: a read
	// fails only when storage adds more than that, and a step-down needs
	// every renew for D to fail. A miss only so starved a storage explains
	// is inconclusive (the probe's stall is judged in Starved).
	slack := cfg.RequestTimeout() - rtt
	mu.Lock()
	defer mu.Unlock()
	if st := el.Status(); !el.IsLeader() || st.Term != term || len(stopped) > 0 {
		reasons := []string{}
		for _, ev := range stopped {
			reasons = append(reasons, fmt.Sprintf("term %d: %s", ev.Term, ev.Reason))
		}
		p.Starved(t, fmt.Sprintf("%d members, %v round trips: the coordinator did not keep term %d for %v: %d leaderships started, %d ended %v",
			members, rtt, term, observe, len(started), len(stopped), reasons), from, time.Now(), slack*time.Duration(cfg.RenewDeadline/cfg.RenewInterval))
		return
	}
	if firstSummary == 0 {
		t.Fatalf("%d members, %v round trips: no summary published in %v of leading", members, rtt, observe)
	}
	t.Logf("%d members, %v round trips: kept term %d for %v (the whole window, no step-down); first summary after %v, the fullest read %d reports, the last %d",
		members, rtt, term, held.Round(time.Millisecond), firstSummary.Round(time.Millisecond), fullest, len(w.Summary().ReportedBy))
	// A summary leaves out a report it could not read in time (readReports):
	// one pass that read them all shows the pass fits; a pass the storage
	// stall cut short is no evidence against it.
	if fullest < members {
		p.Starved(t, fmt.Sprintf("no summary read all %d members' reports (the fullest %d)", members, fullest), from, time.Now(), slack)
	}
}

func uploadJSON(ctx context.Context, c *container.Client, name string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = c.NewBlockBlobClient(name).UploadBuffer(ctx, b, nil)
	return err
}
