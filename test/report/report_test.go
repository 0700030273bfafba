package report

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/blobleader/blobleader/test/checker"
)

var t0 = time.Date(2026, 11, 21, 7, 0, 0, 0, time.UTC)

func at(sec float64) time.Time { return t0.Add(time.Duration(math.Round(sec * 1e9))) }

// story builds one worker's history; proc is the start of its current process
// so mono_ns restarts with each process.
type story struct {
	id     string
	proc   float64
	events []checker.Event
}

func (s *story) add(sec float64, event string, term int64, vu float64) {
	e := checker.Event{T: at(sec), MonoNS: int64((sec - s.proc + 0.001) * 1e9), Identity: s.id, Event: event, Term: term}
	if vu > 0 {
		e.ValidUntil = at(vu)
	}
	s.events = append(s.events, e)
}

func (s *story) lead(term int64, from, lastRenew float64) {
	s.add(from, checker.EventStartedLeading, term, from+10)
	for t := from + 2; t <= lastRenew+1e-9; t += 2 {
		s.add(t, checker.EventRenewed, term, t+10)
	}
}

func (s *story) restart(sec float64) { s.proc = sec; s.add(sec, checker.EventObservedLeader, 0, 0) }

// exampleRun is a 160 s run of three workers through a crash, a graceful
// stop, a partition of the leader, an operator's break, an outage and a
// follower's pause; every invariant holds.
func exampleRun() checker.Run {
	w1, w2, w3 := &story{id: "w1"}, &story{id: "w2"}, &story{id: "w3"}
	w1.lead(1, 0.2, 20.2) // killed at 21
	w2.add(0.5, checker.EventObservedLeader, 1, 0)
	w3.add(0.6, checker.EventObservedLeader, 1, 0)
	w2.lead(2, 36.6, 50)
	w1.restart(40)
	w2.add(50.1, checker.EventStoppedLeading, 2, 58.6)
	w2.add(50.2, checker.EventReleased, 0, 0)
	w3.lead(3, 51.0, 60)
	w2.restart(55)
	w3.add(70, checker.EventStoppedLeading, 3, 69) // partitioned 60..85
	w1.lead(4, 76.0, 94)
	w1.add(96.1, checker.EventStoppedLeading, 4, 104) // broken at 95
	w2.lead(5, 95.9, 104)
	w2.add(114, checker.EventStoppedLeading, 5, 113.9) // outage 105..125
	w3.lead(6, 126.2, 158)
	for _, s := range []*story{w1, w2, w3} {
		if s.id != "w3" {
			s.add(s.events[len(s.events)-1].T.Sub(t0).Seconds()+1, checker.EventAcquireFailed, 0, 0)
		}
	}
	var events []checker.Event
	for _, s := range []*story{w1, w2, w3} {
		events = append(events, s.events...)
	}
	checker.SortEvents(events)
	return checker.Run{
		Events: events,
		Ledger: []checker.LedgerEntry{{Seq: 1, Term: 1, Holder: "w1", At: at(1)}, {Seq: 2, Term: 2, Holder: "w2", At: at(37)}},
		Faults: []checker.Fault{
			{Kind: checker.FaultCrash, Target: "w1", Start: at(21)},
			{Kind: checker.FaultGraceful, Target: "w2", Start: at(50)},
			{Kind: checker.FaultPartition, Target: "w3", Start: at(60), End: at(85)},
			{Kind: checker.FaultBreak, Start: at(95)},
			{Kind: checker.FaultOutage, Target: checker.AllWorkers, Start: at(105), End: at(125)},
			{Kind: checker.FaultPause, Target: "w2", Start: at(130), End: at(150)},
		},
		Start: t0,
		End:   at(160),
		Workers: []checker.Worker{
			{Identity: "w1", Alive: true, Contending: true},
			{Identity: "w2", Alive: true, Contending: true},
			{Identity: "w3", Alive: true, Contending: true},
		},
	}
}

// unsafeRun has a worker that claims leadership without a deadline while
// another term starts: S1 is violated.
func unsafeRun() checker.Run {
	w1, w2 := &story{id: "w1"}, &story{id: "w2"}
	w1.add(0.2, checker.EventStartedLeading, 1, 0)
	w2.lead(2, 18, 40)
	ev := append(w1.events, w2.events...)
	checker.SortEvents(ev)
	return checker.Run{Events: ev, Start: t0, End: at(42),
		Faults: []checker.Fault{{Kind: checker.FaultPause, Target: "w1", Start: at(1), End: at(19)}}}
}

func checked(t *testing.T, run checker.Run) checker.Result {
	t.Helper()
	res, err := checker.Check(run, checker.DefaultParams())
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestExampleRunIsClean(t *testing.T) {
	res := checked(t, exampleRun())
	if err := res.Err(); err != nil {
		t.Fatalf("the example run must hold every invariant: %v", err)
	}
	if len(res.Failovers) != 5 {
		t.Fatalf("expected 5 failovers (crash, graceful, partition, break, outage), got %d", len(res.Failovers))
	}
}

func TestSummarize(t *testing.T) {
	run := exampleRun()
	s := Summarize(run, checked(t, run))
	if !s.OK || s.Violations != 0 || s.Faults != 6 || s.Terms != 6 || s.LedgerEntries != 2 || s.DurationSeconds != 160 {
		t.Errorf("unexpected counts: %+v", s)
	}
	if got := strings.Join(s.Workers, ","); got != "w1,w2,w3" {
		t.Errorf("workers %q", got)
	}
	for kind, n := range map[string]int{"crash": 1, "graceful": 1, "partition": 1, "break": 1, "outage": 1, "pause": 1} {
		if s.FaultsByKind[kind] != n {
			t.Errorf("faults_by_kind[%s] = %d, want %d", kind, s.FaultsByKind[kind], n)
		}
	}
	want := map[string]float64{"crash": 16.4, "graceful": 0.8, "partition": 0, "break": 0.9, "outage": 1.2}
	for kind, d := range want {
		st := s.FailoversByKind[kind]
		if st.Count != 1 || st.P50 != d || st.P99 != d || st.Max != d {
			t.Errorf("failovers_by_kind[%s] = %+v, want one of %.1f s", kind, st, d)
		}
	}
	if _, ok := s.FailoversByKind["pause"]; ok {
		t.Errorf("a follower's pause must not count as a failover")
	}
	// Leaderless: 0..0.2, 30.2..36.6 (the killed w1's belief lasts to its
	// valid_until: the kill caps only a belief without one), 50.1..51,
	// 69..76 and 113.9..126.2 (the last valid_until of a cut-off leader).
	if math.Abs(s.LeaderlessS-(0.2+6.4+0.9+7+12.3)) > 0.002 || s.LongestGapS != 12.3 {
		t.Errorf("leaderless %.3f s (longest %.3f s)", s.LeaderlessS, s.LongestGapS)
	}
	var buf bytes.Buffer
	if err := WriteJSON(&buf, s); err != nil {
		t.Fatal(err)
	}
	var back map[string]any
	if err := json.Unmarshal(buf.Bytes(), &back); err != nil {
		t.Fatalf("summary is not JSON: %v", err)
	}
	for _, k := range []string{"ok", "faults_by_kind", "violation_list", "failovers_by_kind", "failover_list", "leaderless_s"} {
		if _, ok := back[k]; !ok {
			t.Errorf("summary lacks %q", k)
		}
	}
}

func TestPercentile(t *testing.T) {
	vals := make([]float64, 100)
	for i := range vals {
		vals[i] = float64(i + 1)
	}
	tests := []struct {
		name string
		in   []float64
		p    float64
		want float64
	}{
		{"empty", nil, 50, 0},
		{"one", []float64{3}, 99, 3},
		{"p50 of 1..100", vals, 50, 50},
		{"p99 of 1..100", vals, 99, 99},
		{"p50 of two", []float64{1, 2}, 50, 1},
		{"p99 of two", []float64{1, 2}, 99, 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := percentile(tc.in, tc.p); got != tc.want {
				t.Errorf("percentile(%v, %v) = %v, want %v", tc.in, tc.p, got, tc.want)
			}
		})
	}
}

// node is a generic XML element for structural assertions.
type node struct {
	XMLName xml.Name
	Attrs   []xml.Attr `xml:",any,attr"`
	Nodes   []node     `xml:",any"`
	Text    string     `xml:",chardata"`
}

func (n node) attr(name string) string {
	for _, a := range n.Attrs {
		if a.Name.Local == name {
			return a.Value
		}
	}
	return ""
}

func (n node) hasClass(c string) bool {
	for _, f := range strings.Fields(n.attr("class")) {
		if f == c {
			return true
		}
	}
	return false
}

// all returns every descendant (and n) with the class.
func (n node) all(class string) []node {
	var out []node
	if n.hasClass(class) {
		out = append(out, n)
	}
	for _, c := range n.Nodes {
		out = append(out, c.all(class)...)
	}
	return out
}

// texts returns the text of every <text> under n.
func (n node) texts() []string {
	var out []string
	if n.XMLName.Local == "text" {
		out = append(out, n.Text)
	}
	for _, c := range n.Nodes {
		out = append(out, c.texts()...)
	}
	return out
}

func parseSVG(t *testing.T, b []byte) node {
	t.Helper()
	var root node
	if err := xml.Unmarshal(b, &root); err != nil {
		t.Fatalf("SVG is not well-formed XML: %v", err)
	}
	if root.XMLName.Local != "svg" {
		t.Fatalf("root element is %q, want svg", root.XMLName.Local)
	}
	return root
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if strings.Contains(x, s) {
			return true
		}
	}
	return false
}

func TestWriteSVG_Structure(t *testing.T) {
	run := exampleRun()
	res := checked(t, run)
	var buf bytes.Buffer
	if err := WriteSVG(&buf, run, res); err != nil {
		t.Fatal(err)
	}
	root := parseSVG(t, buf.Bytes())

	lanes := root.all("lane")
	var ids []string
	for _, l := range lanes {
		ids = append(ids, l.attr("data-identity"))
	}
	if strings.Join(ids, ",") != "w1,w2,w3" {
		t.Fatalf("lanes %v, want one per worker w1,w2,w3", ids)
	}
	for _, l := range lanes {
		if !contains(l.texts(), l.attr("data-identity")) {
			t.Errorf("lane %s is not labelled", l.attr("data-identity"))
		}
	}
	// Every belief interval is a leader bar on its worker's lane, labelled Tn.
	leaders := root.all("leader")
	if len(leaders) != len(res.Intervals) {
		t.Fatalf("%d leader bars for %d intervals", len(leaders), len(res.Intervals))
	}
	for _, iv := range res.Intervals {
		found := false
		for _, l := range lanes {
			if l.attr("data-identity") != iv.Identity {
				continue
			}
			for _, bar := range l.all("leader") {
				if bar.attr("data-term") == itoa(iv.Term) && contains(bar.texts(), "T"+itoa(iv.Term)) {
					found = true
				}
			}
		}
		if !found {
			t.Errorf("no bar labelled T%d on lane %s", iv.Term, iv.Identity)
		}
	}
	// w1 lived twice (killed at 21, restarted at 40): two follower spans.
	for _, l := range lanes {
		if n := len(l.all("follower")); l.attr("data-identity") == "w1" && n != 2 {
			t.Errorf("w1 has %d process spans, want 2", n)
		}
	}
	// Every fault is shaded with its kind.
	for _, f := range run.Faults {
		g := root.all("fault-" + f.Kind)
		if len(g) == 0 || !contains(g[0].texts(), f.Kind) {
			t.Errorf("fault %s not drawn with its label", f.Kind)
		}
	}
	// Every failover is annotated with its duration.
	fos := root.all("failover")
	if len(fos) != len(res.Failovers) {
		t.Fatalf("%d failover annotations for %d failovers", len(fos), len(res.Failovers))
	}
	for _, want := range []string{"crash 16.4s (≤ 17.1s)", "graceful 0.8s (≤ 2.1s)", "partition 0.0s", "break 0.9s", "outage 1.2s"} {
		found := false
		for _, f := range fos {
			found = found || contains(f.texts(), want)
		}
		if !found {
			t.Errorf("no failover annotation %q", want)
		}
	}
	// The axis counts seconds from the run start.
	axis := root.all("axis")
	if len(axis) != 1 || !contains(axis[0].texts(), "0s") || !contains(axis[0].texts(), "150s") {
		t.Errorf("axis labels missing: %v", axis)
	}
	if len(root.all("violation")) != 0 {
		t.Errorf("a clean run must show no violation marks")
	}
}

func TestWriteSVG_MarksViolations(t *testing.T) {
	run := unsafeRun()
	res := checked(t, run)
	if len(res.Violations) == 0 {
		t.Fatal("the unsafe run must violate S1")
	}
	var buf bytes.Buffer
	if err := WriteSVG(&buf, run, res); err != nil {
		t.Fatal(err)
	}
	root := parseSVG(t, buf.Bytes())
	marks := root.all("violation")
	if len(marks) == 0 || marks[0].attr("data-invariant") != checker.InvS1 {
		t.Fatalf("expected an S1 mark, got %v", marks)
	}
	if len(root.all("unbounded")) != 1 {
		t.Errorf("the claim without a deadline must be drawn as unbounded")
	}
	s := Summarize(run, res)
	if v := s.ViolationList[0]; v.At == nil || *v.At != 18 || strings.Join(v.Workers, ",") != "w1,w2" {
		t.Errorf("summary must place the S1 violation at 18 s on w1,w2: %+v", v)
	}
	if !contains(root.texts(), "VIOLATED: S1") {
		t.Errorf("the verdict line must name S1")
	}
}

func TestWriteSVG_Deterministic(t *testing.T) {
	run := exampleRun()
	res := checked(t, run)
	var a, b bytes.Buffer
	if err := WriteSVG(&a, run, res); err != nil {
		t.Fatal(err)
	}
	if err := WriteSVG(&b, run, res); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Fatal("two renderings of the same run differ")
	}
	var j1, j2 bytes.Buffer
	_ = WriteJSON(&j1, Summarize(run, res))
	_ = WriteJSON(&j2, Summarize(run, res))
	if !bytes.Equal(j1.Bytes(), j2.Bytes()) {
		t.Fatal("two summaries of the same run differ")
	}
}

func TestWriteSVG_EmptyAndEscaped(t *testing.T) {
	run := checker.Run{Events: []checker.Event{{T: t0, Identity: `<w&"1>`, Event: checker.EventObservedLeader}}}
	var buf bytes.Buffer
	if err := WriteSVG(&buf, run, checker.Result{}); err != nil {
		t.Fatal(err)
	}
	root := parseSVG(t, buf.Bytes())
	if l := root.all("lane"); len(l) != 1 || l[0].attr("data-identity") != `<w&"1>` {
		t.Fatalf("identity not escaped and round-tripped: %v", l)
	}
}

func TestWrite_Files(t *testing.T) {
	run := exampleRun()
	res := checked(t, run)
	dir := filepath.Join(t.TempDir(), "reports")
	files, err := Write(dir, "run-1", run, res)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{files.JSON, files.SVG, files.HTML} {
		if fi, err := os.Stat(p); err != nil || fi.Size() == 0 {
			t.Errorf("%s not written: %v", p, err)
		}
	}
	html, _ := os.ReadFile(files.HTML)
	for _, frag := range []string{"<!DOCTYPE html>", "<svg ", "All invariants held", "<td>crash</td>"} {
		if !bytes.Contains(html, []byte(frag)) {
			t.Errorf("HTML lacks %q", frag)
		}
	}
	if bytes.Contains(html, []byte("<?xml")) || bytes.Contains(html, []byte("<script")) {
		t.Errorf("HTML must inline the SVG without a declaration and carry no scripts")
	}
}

// TestWrite_ExampleOut writes the example reports to $BLOBLEADER_REPORT_OUT
// for a person to look at (e.g. rsvg-convert example.svg -o example.png).
func TestWrite_ExampleOut(t *testing.T) {
	dir := os.Getenv("BLOBLEADER_REPORT_OUT")
	if dir == "" {
		t.Skip("set BLOBLEADER_REPORT_OUT=dir to write example reports")
	}
	for name, run := range map[string]checker.Run{"example": exampleRun(), "unsafe": unsafeRun()} {
		files, err := Write(dir, name, run, checked(t, run))
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %s, %s, %s", files.JSON, files.SVG, files.HTML)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func TestWriteSVG_LegendWrapsWithinWidth(t *testing.T) {
	run := checker.Run{Start: t0, End: at(30), Events: []checker.Event{{T: at(1), Identity: "w1", Event: checker.EventObservedLeader}}}
	for i, k := range []string{checker.FaultCrash, checker.FaultGraceful, checker.FaultPause, checker.FaultLatency, checker.FaultTimeout,
		checker.FaultReset, checker.FaultPartition, checker.FaultOutage, checker.FaultBreak} {
		run.Faults = append(run.Faults, checker.Fault{Kind: k, Target: "w1", Start: at(float64(i + 1)), End: at(float64(i + 2))})
	}
	var buf bytes.Buffer
	if err := WriteSVG(&buf, run, checked(t, run)); err != nil {
		t.Fatal(err)
	}
	root := parseSVG(t, buf.Bytes())
	width, _ := strconv.ParseFloat(root.attr("width"), 64)
	items := root.all("legend-item")
	if len(items) != 3+9+2 {
		t.Fatalf("expected 14 legend items (3 roles, 9 fault kinds, failover, violation), got %d", len(items))
	}
	rows := map[string]bool{}
	for _, it := range items {
		for _, n := range it.Nodes {
			if n.XMLName.Local != "text" {
				continue
			}
			x, _ := strconv.ParseFloat(n.attr("x"), 64)
			rows[n.attr("y")] = true
			if right := x + float64(len([]rune(n.Text)))*charW; right > width {
				t.Errorf("legend label %q ends at %.0f, beyond the width %.0f", n.Text, right, width)
			}
		}
	}
	if len(rows) < 2 {
		t.Errorf("expected the legend to wrap onto several rows, got %d", len(rows))
	}
}

// A long run (the 5-minute soak) stays readable on a page: the drawing is
// at most 1,600 px wide whatever the run's length; the scale shrinks.
func TestWriteSVG_LongRunFitsAPage(t *testing.T) {
	run := checker.Run{Start: t0, End: at(310), Events: []checker.Event{{T: at(1), Identity: "w1", Event: checker.EventObservedLeader}}}
	for i := range 45 {
		run.Faults = append(run.Faults, checker.Fault{Kind: checker.FaultCrash, Target: "w1", Start: at(float64(5 + 6*i)), End: at(float64(6 + 6*i))})
	}
	var buf bytes.Buffer
	if err := WriteSVG(&buf, run, checked(t, run)); err != nil {
		t.Fatal(err)
	}
	root := parseSVG(t, buf.Bytes())
	if width, _ := strconv.ParseFloat(root.attr("width"), 64); width > 1600 {
		t.Fatalf("a 310 s run is drawn %.0f px wide, want at most 1600", width)
	}
}
