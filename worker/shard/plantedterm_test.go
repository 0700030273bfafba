package shard

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"testing"
	"time"

	"github.com/blobleader/blobleader/worker/stalltest"
	"github.com/blobleader/blobleader/worker/storage"
)

// A term read from a pool document is data, never an order
// (docs/architecture.md#shards): an assignment or a summary carrying a term
// above the lock's — in its JSON, or only in its metadata — is a corrupt
// document. The leader writes it again under its own term and keeps
// leading; the members never follow it.

// plantTerm rewrites the document name with term `planted`: in its JSON
// (the "term" field, the document otherwise as it was) when inJSON, and in
// its metadata always.
func plantTerm(t *testing.T, name string, m *poolMember, planted int64, inJSON bool) {
	t.Helper()
	c := m.w.cfg.Container
	body, md := readRaw(t, c, name)
	if inJSON {
		var doc map[string]any
		if err := json.Unmarshal(body, &doc); err != nil {
			t.Fatalf("%s is not JSON before the plant: %v", name, err)
		}
		doc["term"] = planted
		if v, ok := doc["version"].(float64); ok {
			doc["version"] = v + 1 // a newer-looking document, as a restore of another pool's would be
		}
		var err error
		if body, err = json.Marshal(doc); err != nil {
			t.Fatal(err)
		}
	}
	s := strconv.FormatInt(planted, 10)
	md = map[string]*string{storage.MetaTerm: &s}
	writeRaw(t, c, name, body, md)
}

// waitRewritten waits until document name holds JSON whose term, and whose
// metadata term, are `term`, and returns how long it took.
func waitRewritten(t *testing.T, m *poolMember, name string, term int64, timeout time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	op := operator(t, m.w.cfg.Container)
	waitFor(t, fmt.Sprintf("%s written again under the leader's term %d", name, term), timeout, func() (bool, string) {
		resp, err := op.NewBlobClient(name).DownloadStream(context.Background(), nil)
		if err != nil {
			return false, err.Error()
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var doc struct {
			Term int64 `json:"term"`
		}
		mt, _ := storage.Term(resp.Metadata)
		return json.Unmarshal(body, &doc) == nil && doc.Term == term && mt == term, string(body) + " metadata term " + strconv.FormatInt(mt, 10)
	})
	return time.Since(start)
}

// planted is how far above the lock's term the tests plant a document's
// term: about 11 days of wall-clock milliseconds, so no new term catches up
// with it while a test runs (the term floor is the wall-clock millisecond).
const planted = 1_000_000_000

// keepsLeading fails t unless m leads term `term` throughout d. A term
// lost over the planted document is a bug; one lost because its renews went
// unanswered for a renew deadline is a stall, judged against p since the
// plant (leaseLapse).
func keepsLeading(t *testing.T, p *stalltest.Probe, m *poolMember, term int64, plantedAt time.Time, d time.Duration) {
	t.Helper()
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if st := m.el.Status(); !m.el.IsLeader() || st.Term != term {
			judgeStarved(t, p, fmt.Sprintf("%s stopped leading term %d over a planted document term (now role %s, term %d, leader %q)", m.id, term, st.Role, st.Term, st.Leader), plantedAt, leaseLapse())
		}
	}
}

func TestPool_TermPlantedInTheAssignmentIsRepairedNotObeyed(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		inJSON bool
	}{{"in its JSON and metadata", true}, {"only in its metadata", false}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			stalltest.RunWith(t, probeConfig(), func(t *testing.T, probe *stalltest.Probe) {
				c := newContainer(t)
				tr := newTracker(t)
				const n = 4
				ms := []*poolMember{startMember(t, c, n, "w1", tr), startMember(t, c, n, "w2", tr)}
				waitSettled(t, n, ms, 60*time.Second)
				leader := leaderOf(t, ms)
				term := leader.el.Status().Term
				name := Layout{Blob: "leader"}.Assignment()
				plantedAt := time.Now()
				plantTerm(t, name, leader, term+planted, tc.inJSON)
				p := testElection("x")
				took := waitRewritten(t, leader, name, term, p.RetryPeriod*11/10+3*p.RequestTimeout()+2*time.Second)
				t.Logf("planted term %d over the leader's %d; written again under %d after %v", term+planted, term, term, took.Round(time.Millisecond))
				keepsLeading(t, probe, leader, term, plantedAt, 3*p.RetryPeriod)
				for _, m := range ms {
					if a := m.w.Viewed(); a == nil || a.Term != term {
						t.Errorf("%s follows an assignment of term %v, expected the leader's %d", m.id, a, term)
					}
				}
				if got := tr.repairCount(ObjectAssignment, CauseTermAboveLock); got != 1 {
					t.Errorf("%d repairs of the assignment for a term above the lock's were reported, expected 1 (all: %v)", got, tr.repairs)
				}
				ms = append(ms, startMember(t, c, n, "w3", tr))
				waitSettled(t, n, ms, 30*time.Second)
			})
		})
	}
}

func TestPool_TermPlantedInTheSummaryIsRepairedNotObeyed(t *testing.T) {
	t.Parallel()
	stalltest.RunWith(t, probeConfig(), func(t *testing.T, probe *stalltest.Probe) { termPlantedInTheSummary(t, probe) })
}

func termPlantedInTheSummary(t *testing.T, probe *stalltest.Probe) {
	c := newContainer(t)
	tr := newTracker(t)
	const n = 4
	ms := []*poolMember{startMember(t, c, n, "w1", tr), startMember(t, c, n, "w2", tr)}
	waitSettled(t, n, ms, 60*time.Second)
	leader := leaderOf(t, ms)
	term := leader.el.Status().Term
	name := Layout{Blob: "leader"}.Summary()
	p := testElection("x")
	waitRewritten(t, leader, name, term, 5*p.RetryPeriod+10*time.Second) // a first summary
	plantedAt := time.Now()
	plantTerm(t, name, leader, term+planted, true)
	took := waitRewritten(t, leader, name, term, 5*p.RetryPeriod+p.RetryPeriod*11/10+3*p.RequestTimeout()+2*time.Second)
	t.Logf("planted term %d over the leader's %d in the summary; written again after %v", term+planted, term, took.Round(time.Millisecond))
	keepsLeading(t, probe, leader, term, plantedAt, 3*p.RetryPeriod)
	if got := tr.repairCount(ObjectSummary, CauseTermAboveLock); got != 1 {
		t.Errorf("%d repairs of the summary for a term above the lock's were reported, expected 1 (all: %v)", got, tr.repairs)
	}
}
