package shard

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/blobleader/blobleader/worker/stalltest"
)

// The pool documents are the coordinator's: deleted, rolled back or
// corrupted from outside, it writes them again under its term, above any
// version a member has seen, and the pool goes on (docs/architecture.md#shards).

// readRaw and writeRaw are the test's own storage calls, through an
// operator's client (wait_test.go).
func readRaw(t *testing.T, c *container.Client, name string) ([]byte, map[string]*string) {
	t.Helper()
	resp, err := operator(t, c).NewBlobClient(name).DownloadStream(context.Background(), nil)
	if err != nil {
		t.Fatalf("read %s: %v", name, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return b, resp.Metadata
}

func writeRaw(t *testing.T, c *container.Client, name string, body []byte, md map[string]*string) {
	t.Helper()
	if _, err := operator(t, c).NewBlockBlobClient(name).UploadBuffer(context.Background(), body, &blockblob.UploadBufferOptions{Metadata: md}); err != nil {
		t.Fatalf("write %s: %v", name, err)
	}
}

// leaderOf returns the member that leads the election.
func leaderOf(t *testing.T, ms []*poolMember) *poolMember {
	t.Helper()
	for _, m := range ms {
		if m.el.IsLeader() {
			return m
		}
	}
	t.Fatal("expected one member to lead")
	return nil
}

// waitVersion waits until the assignment blob holds valid JSON of version
// above v and returns it.
func waitVersion(t *testing.T, c *container.Client, v int64, timeout time.Duration) Assignment {
	t.Helper()
	op := operator(t, c)
	var a Assignment
	waitFor(t, fmt.Sprintf("the assignment at a version above %d", v), timeout, func() (bool, string) {
		resp, err := op.NewBlobClient(Layout{Blob: "leader"}.Assignment()).DownloadStream(context.Background(), nil)
		if err != nil {
			return false, err.Error()
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		a = Assignment{}
		return json.Unmarshal(b, &a) == nil && a.Version > v, string(b)
	})
	return a
}

func TestPool_DeletedAssignmentIsWrittenAboveWhatMembersSaw(t *testing.T) {
	t.Parallel()
	c := newContainer(t)
	tr := newTracker(t)
	const n = 6
	ms := []*poolMember{startMember(t, c, n, "w1", tr), startMember(t, c, n, "w2", tr)}
	waitSettled(t, n, ms, 60*time.Second)
	seen := leaderOf(t, ms).w.Assignment().Version
	if _, err := operator(t, c).NewBlobClient(Layout{Blob: "leader"}.Assignment()).Delete(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	a := waitVersion(t, c, seen, 5*time.Second)
	t.Logf("deleted at version %d; written again as version %d", seen, a.Version)
	ms = append(ms, startMember(t, c, n, "w3", tr))
	waitSettled(t, n, ms, 30*time.Second)
}

func TestPool_RolledBackAssignmentIsWrittenAboveWhatMembersSaw(t *testing.T) {
	t.Parallel()
	c := newContainer(t)
	tr := newTracker(t)
	const n = 6
	name := Layout{Blob: "leader"}.Assignment()
	ms := []*poolMember{startMember(t, c, n, "w1", tr), startMember(t, c, n, "w2", tr)}
	waitSettled(t, n, ms, 60*time.Second)
	old, md := readRaw(t, c, name)
	ms = append(ms, startMember(t, c, n, "w3", tr))
	waitSettled(t, n, ms, 30*time.Second)
	seen := leaderOf(t, ms).w.Assignment().Version
	time.Sleep(2 * testElection("x").RetryPeriod) // every member reads it
	writeRaw(t, c, name, old, md)
	a := waitVersion(t, c, seen, 5*time.Second)
	t.Logf("rolled back below version %d; written again as version %d", seen, a.Version)
	ms = append(ms, startMember(t, c, n, "w4", tr))
	waitSettled(t, n, ms, 30*time.Second)
}

func TestPool_CorruptAssignmentIsRepairedAndTheViewsStayFresh(t *testing.T) {
	t.Parallel()
	stalltest.RunWith(t, probeConfig(), func(t *testing.T, p *stalltest.Probe) { corruptAssignmentIsRepaired(t, p) })
}

func corruptAssignmentIsRepaired(t *testing.T, p *stalltest.Probe) {
	c := newContainer(t)
	tr := newTracker(t)
	const n = 6
	name := Layout{Blob: "leader"}.Assignment()
	ms := []*poolMember{startMember(t, c, n, "w1", tr), startMember(t, c, n, "w2", tr), startMember(t, c, n, "w3", tr)}
	waitSettled(t, n, ms, 60*time.Second)
	leader := leaderOf(t, ms)
	seen := leader.w.Assignment().Version
	term := strconv.FormatInt(leader.w.Assignment().Term, 10)
	good, _ := readRaw(t, c, name)
	corrupted := time.Now()
	writeRaw(t, c, name, good[:len(good)/2], map[string]*string{"term": &term})
	a := waitVersion(t, c, seen, 5*time.Second)
	t.Logf("corrupted at version %d; repaired as version %d", seen, a.Version)
	ttl := leader.w.cfg.ViewTTL()
	for _, m := range ms {
		if _, fresh := m.w.view.current(time.Now()); !fresh {
			// Its last good read may precede the corruption by up to the TTL.
			judgeStarved(t, p, m.id+"'s view went stale over a corruption the leader repaired", corrupted.Add(-ttl), oneFailedRead())
		}
	}
	// A departure is handled as usual.
	var gone *poolMember
	for _, m := range ms {
		if m != leader {
			gone = m
		}
	}
	gone.stop()
	var left []*poolMember
	for _, m := range ms {
		if m != gone {
			left = append(left, m)
		}
	}
	waitSettled(t, n, left, 30*time.Second)
}

func TestPool_CorruptSummaryIsWrittenAgain(t *testing.T) {
	t.Parallel()
	c := newContainer(t)
	tr := newTracker(t)
	const n = 4
	name := Layout{Blob: "leader"}.Summary()
	ms := []*poolMember{startMember(t, c, n, "w1", tr), startMember(t, c, n, "w2", tr)}
	waitSettled(t, n, ms, 60*time.Second)
	p := testElection("x").RetryPeriod
	op := operator(t, c)
	readable := func() (bool, string) {
		sum, err := ReadSummary(context.Background(), op, "leader")
		return err == nil && sum != nil, fmt.Sprintf("%v", err)
	}
	waitFor(t, "a summary", time.Minute, readable)
	good, md := readRaw(t, c, name)
	writeRaw(t, c, name, good[:len(good)/2], md)
	waitFor(t, "the summary readable again after its corruption", 5*p+p*11/10+6*time.Second+2*time.Second, readable)
}
