package report

import (
	"bytes"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/blobleader/blobleader/test/checker"
)

// A run whose history lost records is reported inconclusive, never ok.
func TestSummarize_Inconclusive(t *testing.T) {
	run := exampleRun()
	run.Events = append(run.Events, checker.Event{T: at(100), Identity: "w2", Event: checker.EventHistoryDropped, Dropped: 3})
	checker.SortEvents(run.Events)
	res := checked(t, run)
	s := Summarize(run, res)
	if s.OK || s.Verdict != checker.VerdictInconclusive || len(s.Inconclusive) != 1 || s.Violations != 0 {
		t.Fatalf("summary ok %v, verdict %q, inconclusive %v, violations %d; want inconclusive, not ok", s.OK, s.Verdict, s.Inconclusive, s.Violations)
	}
	var buf bytes.Buffer
	if err := WriteSVG(&buf, run, res); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "INCONCLUSIVE") {
		t.Errorf("the timeline does not say the run is inconclusive")
	}
	if clean := Summarize(exampleRun(), checked(t, exampleRun())); clean.Verdict != checker.VerdictPass || !clean.OK {
		t.Errorf("clean run: verdict %q ok %v", clean.Verdict, clean.OK)
	}
}

// A timing bound missed within the machine's stall: the summary says
// inconclusive and carries the miss, the stall and the CPU probe; the
// timeline marks both; a retried scenario's report says its attempt.
func TestWrite_StallExplainedMissAndCPUProbe(t *testing.T) {
	run := exampleRun()
	run.Sched = &checker.Sched{Tick: 10 * time.Millisecond, Floor: time.Millisecond, Wakes: 16000,
		Late: []checker.Wake{{Due: at(30), Woke: at(30.002)}, {Due: at(36), Woke: at(36.3)}}}
	res := checked(t, run)
	res.Stalled = []checker.Violation{{Invariant: checker.InvL1, Message: "next leader 150 ms late", At: at(37), Workers: []string{"w2"}, Miss: 150 * time.Millisecond, Stall: 300 * time.Millisecond}}
	s := Summarize(run, res)
	if s.OK || s.Verdict != checker.VerdictInconclusive || len(s.Stalled) != 1 || s.Stalled[0].Miss != 0.15 || s.Stalled[0].Stall != 0.3 {
		t.Fatalf("summary ok %v, verdict %q, stalled %+v; want inconclusive with miss 0.15 s and stall 0.3 s", s.OK, s.Verdict, s.Stalled)
	}
	if c := s.CPU; c == nil || c.Wakes != 16000 || c.Late != 2 || c.MaxS != 0.3 || c.MaxAt == nil || *c.MaxAt != 36 || c.TotalS != 0.302 {
		t.Fatalf("cpu probe %+v; want 16000 wakes, 2 late, max 0.3 s at 36 s, total 0.302 s", c)
	}
	files, err := Write(t.TempDir(), "stalled", run, res, Attempt(2))
	if err != nil {
		t.Fatal(err)
	}
	js, _ := os.ReadFile(files.JSON)
	svg, _ := os.ReadFile(files.SVG)
	html, _ := os.ReadFile(files.HTML)
	for _, c := range []struct {
		what string
		in   []byte
		frag string
	}{
		{"JSON", js, `"attempt": 2`}, {"JSON", js, `"stall_s": 0.3`}, {"JSON", js, `"max_stall_s": 0.3`},
		{"SVG", svg, `class="machine-stall"`}, {"SVG", svg, `class="stalled"`}, {"SVG", svg, "timing bound(s) missed within the machine"},
		{"HTML", html, "Inconclusive"}, {"HTML", html, "Attempt 2"}, {"HTML", html, "CPU probe: 16000 wakes"},
	} {
		if !bytes.Contains(c.in, []byte(c.frag)) {
			t.Errorf("%s lacks %q", c.what, c.frag)
		}
	}
	if clean, _ := Write(t.TempDir(), "clean", exampleRun(), checked(t, exampleRun())); clean.JSON != "" {
		if b, _ := os.ReadFile(clean.JSON); bytes.Contains(b, []byte(`"attempt"`)) || bytes.Contains(b, []byte(`"cpu_probe"`)) {
			t.Errorf("a first run without a probe carries attempt or cpu_probe: %s", b)
		}
	}
}
