package history_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/blobleader/blobleader/worker/election"
	"github.com/blobleader/blobleader/worker/election/bloblock"
	"github.com/blobleader/blobleader/worker/history"
)

func TestNewRecord_FollowsTheContract(t *testing.T) {
	start := time.Now()
	at := start.Add(1500 * time.Millisecond)
	r := history.NewRecord("w1", start, election.Event{Kind: election.EventStartedLeading, Time: at, Term: 7, Reason: "acquired", ValidUntil: at.Add(10 * time.Second)})
	b, _ := json.Marshal(r)
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	if m["event"] != "started_leading" || m["term"] != float64(7) || m["identity"] != "w1" || m["mono_ns"] != float64(1500*time.Millisecond) {
		t.Fatalf("record %s does not follow the contract", b)
	}
	if _, err := time.Parse(time.RFC3339Nano, m["t"].(string)); err != nil || !strings.HasSuffix(m["t"].(string), "Z") {
		t.Fatalf("t %v is not UTC RFC3339Nano", m["t"])
	}
	r = history.NewRecord("w1", start, election.Event{Kind: election.EventAcquireFailed, Time: at, Reason: "acquire: request timed out"})
	b, _ = json.Marshal(r)
	if strings.Contains(string(b), "valid_until") || strings.Contains(string(b), `"term"`) || strings.Contains(string(b), "leader") {
		t.Fatalf("empty fields must be omitted: %s", b)
	}
}

func TestFile_AppendsWholeLines(t *testing.T) {
	p := filepath.Join(t.TempDir(), "h.jsonl")
	f, err := history.OpenFile(p)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 100 {
		if err := f.Write(history.Record{T: "x", Identity: "w", Event: fmt.Sprint(i)}); err != nil {
			t.Fatal(err)
		}
	}
	f.Close()
	if got := readLines(t, mustOpen(t, p)); len(got) != 100 || got[99].Event != "99" {
		t.Fatalf("read back %d lines", len(got))
	}
}

func mustOpen(t *testing.T, p string) io.Reader {
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func readLines(t *testing.T, r io.Reader) []history.Record {
	t.Helper()
	var out []history.Record
	for sc := bufio.NewScanner(r); sc.Scan(); {
		var rec history.Record
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		out = append(out, rec)
	}
	return out
}

func historyClient(t *testing.T, conn string) *container.Client {
	t.Helper()
	c, err := bloblock.NewContainerClient(bloblock.ClientConfig{ConnectionString: conn, Container: history.Container, RequestTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return c
}
