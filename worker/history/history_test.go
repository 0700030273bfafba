package history_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/blobleader/blobleader/worker/azuritetest"
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

func TestBlob_FlushesEverySecondInOrderAndOnClose(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	az := azuritetest.StartT(t)
	c := historyClient(t, az.ConnectionString())
	sink := history.OpenBlob(c, "w1", time.Now(), history.BlobOptions{FlushEvery: 200 * time.Millisecond})
	for i := range 50 {
		_ = sink.Write(history.Record{T: "x", Identity: "w1", Event: fmt.Sprint(i)})
	}
	// Flushed without Close, within a couple of flush periods.
	deadline := time.Now().Add(5 * time.Second)
	var got []history.Record
	for len(got) < 50 {
		if time.Now().After(deadline) {
			t.Fatalf("only %d of 50 records in the blob after 5s without Close", len(got))
		}
		time.Sleep(100 * time.Millisecond)
		if resp, err := c.NewAppendBlobClient(sink.Name()).DownloadStream(ctx, nil); err == nil {
			got = readLines(t, resp.Body)
			resp.Body.Close()
		}
	}
	for i := 50; i < 60; i++ {
		_ = sink.Write(history.Record{T: "x", Identity: "w1", Event: fmt.Sprint(i)})
	}
	if err := sink.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
	resp, err := c.NewAppendBlobClient(sink.Name()).DownloadStream(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	got = readLines(t, resp.Body)
	if len(got) != 60 {
		t.Fatalf("%d records after Close, want 60", len(got))
	}
	for i, r := range got {
		if r.Event != fmt.Sprint(i) {
			t.Fatalf("record %d is %q: out of order", i, r.Event)
		}
	}
	if !strings.HasPrefix(sink.Name(), "w1/") {
		t.Fatalf("blob %q is not under the identity's folder", sink.Name())
	}
}

func TestBlob_WriteNeverBlocksWhenStorageIsDown(t *testing.T) {
	port, _ := azuritetest.FreePort() // nothing listens there
	c := historyClient(t, azuritetest.ConnectionString(fmt.Sprintf("http://127.0.0.1:%d/%s", port, azuritetest.Account)))
	sink := history.OpenBlob(c, "w1", time.Now(), history.BlobOptions{FlushEvery: 50 * time.Millisecond, MaxBuffer: 10 << 10})
	start := time.Now()
	for i := range 20000 {
		_ = sink.Write(history.Record{T: "x", Identity: "w1", Event: fmt.Sprint(i)})
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Fatalf("20,000 writes took %s with storage down: Write blocks", took)
	}
	if sink.Dropped() == 0 {
		t.Fatal("a 10 KiB buffer held 20,000 records: nothing was dropped or counted")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := sink.Close(ctx); err == nil {
		t.Fatal("Close with storage down and records dropped returned nil")
	}
}

// Records the sink had to drop are announced in the blob: a history_dropped
// record with the count comes first, so a reader cannot mistake the history
// for a complete one.
func TestBlob_DroppedRecordsAreAnnouncedInTheBlob(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	az := azuritetest.StartT(t)
	c := historyClient(t, az.ConnectionString())
	// A flush period far beyond the test: only Close flushes, so the 2 KiB
	// buffer overflows first.
	sink := history.OpenBlob(c, "w1", time.Now(), history.BlobOptions{FlushEvery: time.Hour, MaxBuffer: 2 << 10})
	for i := range 500 {
		_ = sink.Write(history.Record{T: "x", Identity: "w1", Event: fmt.Sprint(i)})
	}
	dropped := sink.Dropped()
	if dropped == 0 {
		t.Fatal("a 2 KiB buffer held 500 records: nothing dropped")
	}
	if err := sink.Close(ctx); err == nil || !strings.Contains(err.Error(), "dropped") {
		t.Fatalf("Close after drops = %v, want an error naming the drops", err)
	}
	resp, err := c.NewAppendBlobClient(sink.Name()).DownloadStream(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	got := readLines(t, resp.Body)
	if len(got) == 0 || got[0].Event != history.EventDropped || got[0].Dropped != dropped || got[0].Identity != "w1" {
		t.Fatalf("first record %+v, want history_dropped with dropped=%d for w1", got[0], dropped)
	}
	if int64(len(got)-1)+dropped != 500 {
		t.Fatalf("%d records kept + %d dropped != 500 written", len(got)-1, dropped)
	}
	if last := got[len(got)-1].Event; last != "499" {
		t.Fatalf("last record %q, want the newest (499) kept", last)
	}
}
