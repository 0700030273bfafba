package checker

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestReadHistory_MergesSortedAndTolerant(t *testing.T) {
	dir := t.TempDir()
	a := writeFile(t, dir, "a.jsonl", ""+
		`{"t":"2026-11-21T07:00:00.5Z","mono_ns":5,"identity":"w1","event":"started_leading","term":3,"valid_until":"2026-11-21T07:00:10.5Z","new_field":{"x":1}}`+"\n"+
		"\n"+
		`{"t":"2026-11-21T07:00:02Z","mono_ns":7,"identity":"w1","event":"renewed","term":3,"valid_until":"2026-11-21T07:00:12Z"}`+"\n")
	b := writeFile(t, dir, "b.jsonl", ""+
		`{"t":"2026-11-21T07:00:01Z","mono_ns":9,"identity":"w2","event":"observed_leader","leader":"w1","term":3}`+"\n"+
		`{"t":"2026-11-21T07:00:03Z","mono_ns":11,"identity":"w2","event":"some_future_event","reason":"x"}`+"\n")
	evs, err := ReadHistory(a, b)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range evs {
		got = append(got, e.Identity+" "+e.Event+" "+e.Source)
	}
	want := []string{
		"w1 started_leading " + a + ":1",
		"w2 observed_leader " + b + ":1",
		"w1 renewed " + a + ":3",
		"w2 some_future_event " + b + ":2",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("merged order:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	first := evs[0]
	if first.Term != 3 || first.MonoNS != 5 || !first.ValidUntil.Equal(time.Date(2026, 11, 21, 7, 0, 10, 500e6, time.UTC)) {
		t.Errorf("fields not decoded: %+v", first)
	}
	if evs[1].Leader != "w1" {
		t.Errorf("leader not decoded: %+v", evs[1])
	}
}

func TestReadHistory_Malformed(t *testing.T) {
	tests := []struct {
		name    string
		content string
		want    string // fragment of the error
	}{
		{"not JSON", `{"t":"2026-11-21T07:00:00Z","identity":"w1","event":"renewed"}` + "\n" + "garbage here\n", ":2: not a JSON object"},
		{"broken JSON", `{"t":"2026-11-21T07:00:00Z","identity":"w1",` + "\n" + `{"t":"2026-11-21T07:00:00Z","identity":"w1","event":"renewed"}` + "\n", ":1: "},
		{"missing identity", `{"t":"2026-11-21T07:00:00Z","event":"renewed"}` + "\n", ":1: missing identity"},
		{"missing time and event", `{"identity":"w1"}` + "\n", ":1: missing t, event"},
		{"bad time", `{"t":"yesterday","identity":"w1","event":"renewed"}` + "\n", ":1: parsing time"},
		{"wrong type", `{"t":"2026-11-21T07:00:00Z","identity":"w1","event":"renewed","term":"seven"}` + "\n", ":1: json: cannot unmarshal"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := writeFile(t, t.TempDir(), "h.jsonl", tc.content)
			_, err := ReadHistory(p)
			if err == nil {
				t.Fatal("expected an error for a malformed line")
			}
			if !errors.Is(err, ErrMalformed) {
				t.Errorf("error does not wrap ErrMalformed: %v", err)
			}
			if !strings.Contains(err.Error(), p+tc.want) {
				t.Errorf("error %q does not name %q", err, p+tc.want)
			}
		})
	}
}

func TestReadHistory_TornLastLineDropped(t *testing.T) {
	p := writeFile(t, t.TempDir(), "h.jsonl",
		`{"t":"2026-11-21T07:00:00Z","identity":"w1","event":"started_leading","term":1}`+"\n"+
			`{"t":"2026-11-21T07:00:02Z","identity":"w1","ev`)
	evs, err := ReadHistory(p)
	if err != nil {
		t.Fatalf("a torn final line must be dropped, got %v", err)
	}
	if len(evs) != 1 || evs[0].Event != EventStartedLeading {
		t.Fatalf("expected only the complete line, got %+v", evs)
	}
	// A complete final line without a newline is still read.
	p2 := writeFile(t, t.TempDir(), "h.jsonl", `{"t":"2026-11-21T07:00:00Z","identity":"w1","event":"renewed"}`)
	if evs, err := ReadHistory(p2); err != nil || len(evs) != 1 {
		t.Fatalf("expected the unterminated complete line, got %v, %v", evs, err)
	}
}

func TestReadHistory_MissingFile(t *testing.T) {
	if _, err := ReadHistory(filepath.Join(t.TempDir(), "nope.jsonl")); err == nil || !strings.Contains(err.Error(), "nope.jsonl") {
		t.Fatalf("expected an error naming the missing file, got %v", err)
	}
}

// A worker that has not written yet has no file: it is passed over, while
// the files that exist are read as ReadHistory reads them.
func TestReadWrittenHistory_PassesOverFilesNotYetWritten(t *testing.T) {
	dir := t.TempDir()
	written := filepath.Join(dir, "w1.jsonl")
	line := `{"t":"2026-11-21T07:00:00Z","identity":"w1","event":"started_leading","term":3}` + "\n"
	if err := os.WriteFile(written, []byte(line), 0o644); err != nil {
		t.Fatal(err)
	}
	evs, err := ReadWrittenHistory(written, filepath.Join(dir, "w2.jsonl"))
	if err != nil {
		t.Fatalf("a history file not yet written must not be an error: %v", err)
	}
	if len(evs) != 1 || evs[0].Identity != "w1" {
		t.Fatalf("want the one event of w1, got %+v", evs)
	}
}

func TestParseLedger(t *testing.T) {
	want := []LedgerEntry{
		{Seq: 1, Term: 3, Holder: "w1", At: time.Date(2026, 11, 21, 7, 0, 0, 0, time.UTC)},
		{Seq: 2, Term: 4, Holder: "w2", At: time.Date(2026, 11, 21, 7, 0, 1, 0, time.UTC)},
	}
	for name, in := range map[string]string{
		"lines": `{"seq":1,"term":3,"holder":"w1","at":"2026-11-21T07:00:00Z"}` + "\n\n" + `{"seq":2,"term":4,"holder":"w2","at":"2026-11-21T07:00:01Z","extra":true}` + "\n",
		"array": `[{"seq":1,"term":3,"holder":"w1","at":"2026-11-21T07:00:00Z"},{"seq":2,"term":4,"holder":"w2","at":"2026-11-21T07:00:01Z"}]`,
	} {
		t.Run(name, func(t *testing.T) {
			got, err := ParseLedger(strings.NewReader(in))
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(want) {
				t.Fatalf("got %+v", got)
			}
			for i := range want {
				if got[i].Seq != want[i].Seq || got[i].Term != want[i].Term || got[i].Holder != want[i].Holder || !got[i].At.Equal(want[i].At) {
					t.Errorf("entry %d: got %+v want %+v", i, got[i], want[i])
				}
			}
		})
	}
	if _, err := ParseLedger(strings.NewReader("{\"seq\":1}\nnot json\n")); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("expected an error naming line 2, got %v", err)
	}
}
