package cluster

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// noWorkers is a cluster with Azurite (and its probe) and no worker: the
// binary is never run.
func noWorkers(t *testing.T) *Local {
	t.Helper()
	return NewLocal(t, LocalConfig{Binary: "no-worker-is-started"})
}

// readProbeDump parses dir/azurite-probe.jsonl: its records and the
// "overwritten" count of a first line that has one.
func readProbeDump(t *testing.T, path string) (recs []ProbeRecord, overwritten uint64) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	line := 0
	for sc := bufio.NewScanner(f); sc.Scan(); {
		line++
		if line == 1 && strings.HasPrefix(sc.Text(), `{"overwritten":`) {
			var m map[string]uint64
			if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
				t.Fatalf("line 1 %q: %v", sc.Text(), err)
			}
			overwritten = m["overwritten"]
			continue
		}
		var r ProbeRecord
		dec := json.NewDecoder(strings.NewReader(sc.Text()))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&r); err != nil {
			t.Fatalf("line %d %q: %v", line, sc.Text(), err)
		}
		if r.Start.IsZero() {
			t.Fatalf("line %d %q: no start", line, sc.Text())
		}
		recs = append(recs, r)
	}
	return recs, overwritten
}

// A local cluster probes its Azurite from the start: every probe is an HTTP
// answer, none is a stall, and the dump is one parseable record a line.
func TestLocal_StorageProbeRecordsAzuritesAnswers(t *testing.T) {
	t.Parallel()
	c := noWorkers(t)
	s, err := c.StorageProbe().Await(ctxT(t, 20*time.Second), func(s ProbeSummary) bool { return s.Probes >= 4 })
	if err != nil {
		t.Fatal(err)
	}
	if s.Failed != 0 || len(s.Stalls) != 0 {
		t.Errorf("a live Azurite: %s", s)
	}
	if line := s.String(); !strings.HasPrefix(line, "storage probe: ") || !strings.HasSuffix(line, "stalls ≥1s: none") {
		t.Errorf("summary line %q", line)
	}
	dir := t.TempDir()
	if err := c.WriteStorageProbe(dir); err != nil {
		t.Fatal(err)
	}
	recs, lost := readProbeDump(t, filepath.Join(dir, "azurite-probe.jsonl"))
	if len(recs) < 4 || lost != 0 {
		t.Fatalf("dump: %d records, %d overwritten; want ≥ 4 and none", len(recs), lost)
	}
	for i, r := range recs {
		if r.Status == 0 || r.Err != "" || r.End.Before(r.Start) || r.InFlight {
			t.Errorf("record %d: %+v: want an answered probe", i, r)
		}
		if i > 0 && r.Start.Before(recs[i-1].End) {
			t.Errorf("record %d started %v before record %d ended %v: one probe at a time", i, r.Start, i-1, recs[i-1].End)
		}
	}

	// A ring of 2 keeps the latest two and says how many it dropped.
	small := StartStorageProbe(c.Azurite().BlobEndpoint(), StorageProbeConfig{Interval: 10 * time.Millisecond, Keep: 2})
	defer small.Stop()
	if _, err := small.Await(ctxT(t, 20*time.Second), func(s ProbeSummary) bool { return s.Probes >= 5 }); err != nil {
		t.Fatal(err)
	}
	small.Stop()
	total := small.Summary().Probes
	path := filepath.Join(t.TempDir(), "small.jsonl")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := small.WriteJSONL(f); err != nil {
		t.Fatal(err)
	}
	f.Close()
	recs, lost = readProbeDump(t, path)
	if len(recs) != 2 || lost != total-2 {
		t.Errorf("ring of 2 after %d probes: %d records, %d overwritten; want 2 and %d", total, len(recs), lost, total-2)
	}
}

// Azurite frozen (SIGSTOP) for 1.5 s: while frozen, the dump names the
// probe still waiting; after it thaws, the probe records one stall of 1 s or
// more inside the freeze, and the failed run's lines say so.
func TestLocal_StorageProbeRecordsAStallWhenAzuriteIsFrozen(t *testing.T) {
	t.Parallel()
	c := noWorkers(t)
	probe := c.StorageProbe()
	if _, err := probe.Await(ctxT(t, 20*time.Second), func(s ProbeSummary) bool { return s.Probes >= 2 }); err != nil {
		t.Fatal(err)
	}
	pgid := c.Azurite().Pid() // Azurite leads its own process group
	thawed := false
	var thawedAt time.Time // just before SIGCONT: no answer can come earlier
	thaw := func() {
		if !thawed {
			thawed, thawedAt = true, time.Now()
			if err := syscall.Kill(-pgid, syscall.SIGCONT); err != nil {
				t.Errorf("SIGCONT Azurite: %v", err)
			}
		}
	}
	t.Cleanup(thaw) // never leave it frozen, whatever fails below
	frozen := time.Now()
	if err := syscall.Kill(-pgid, syscall.SIGSTOP); err != nil {
		t.Fatalf("SIGSTOP Azurite: %v", err)
	}
	<-time.After(1500 * time.Millisecond) // the fault's length, not a wait for an event
	during := t.TempDir()
	if err := c.WriteStorageProbe(during); err != nil {
		t.Fatal(err)
	}
	thaw()

	recs, _ := readProbeDump(t, filepath.Join(during, "azurite-probe.jsonl"))
	if last := recs[len(recs)-1]; !last.InFlight || !last.Stall || last.Duration() < time.Second {
		t.Errorf("dump while frozen ends with %+v; want the probe still waiting, ≥ 1 s", last)
	}

	s, err := probe.Await(ctxT(t, 20*time.Second), func(s ProbeSummary) bool { return len(s.Stalls) > 0 })
	if err != nil {
		t.Fatal(err)
	}
	st := s.Stalls[0]
	if st.Duration() < time.Second || st.Status == 0 {
		t.Errorf("stall %+v: want an answer after ≥ 1 s", st)
	}
	if st.End.Before(thawedAt) || st.Start.After(thawedAt) || st.End.Before(frozen.Add(time.Second)) {
		t.Errorf("stall %v–%v is not the freeze %v–%v", st.Start, st.End, frozen, thawedAt)
	}
	if line := s.String(); !strings.Contains(line, "stalls ≥1s: 1 (") {
		t.Errorf("summary line %q does not list the stall", line)
	}
	if ex := s.Explanations(); len(ex) != 1 || !strings.Contains(ex[0], "did not answer the harness's probe from "+st.Start.Format("15:04:05.000")) {
		t.Errorf("explanations %q", ex)
	}
	// The checker counts the freeze as the environment's stall: Slow has
	// it, from the send + SlowFloor to the answer.
	var slow time.Duration
	for _, w := range probe.Slow() {
		if !w.Woke.Before(st.End) && !w.Due.After(st.Start.Add(SlowFloor)) {
			slow = w.Late()
		}
	}
	if d := slow - (st.Duration() - SlowFloor); d < -time.Millisecond || d > time.Millisecond {
		t.Errorf("Slow() = %v; want the stall's %v less the %v floor", probe.Slow(), st.Duration(), SlowFloor)
	}
}

// Azurite gone (killed): the probes get no HTTP answer, and the failed
// run's lines say when the first was sent and why it failed.
func TestLocal_StorageProbeCountsProbesAzuriteNeverAnswered(t *testing.T) {
	t.Parallel()
	c := noWorkers(t)
	probe := c.StorageProbe()
	if _, err := probe.Await(ctxT(t, 20*time.Second), func(s ProbeSummary) bool { return s.Probes >= 1 }); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	c.Azurite().Stop()
	s, err := probe.Await(ctxT(t, 20*time.Second), func(s ProbeSummary) bool { return s.Failed >= 2 })
	if err != nil {
		t.Fatal(err)
	}
	if s.FirstFail == nil || s.FirstFail.Err == "" || s.FirstFail.Status != 0 || s.FirstFail.End.Before(killed) {
		t.Fatalf("first failure %+v (Azurite killed at %v)", s.FirstFail, killed)
	}
	ex := s.Explanations()
	if len(ex) == 0 || !strings.Contains(ex[len(ex)-1], "got no HTTP answer from storage (Azurite), the first sent at "+s.FirstFail.Start.Format("15:04:05.000")) {
		t.Errorf("explanations %q", ex)
	}
	if !strings.Contains(s.String(), " failed)") || strings.Contains(s.String(), "(0 failed)") {
		t.Errorf("summary line %q does not count the failures", s.String())
	}
}
