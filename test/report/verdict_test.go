package report

import (
	"bytes"
	"strings"
	"testing"

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
