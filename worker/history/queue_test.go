package history_test

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/blobleader/blobleader/worker/history"
)

// A history File on a FIFO nobody reads blocks in write(2) once the pipe is
// full: the real thing a stuck disk or log collector does. In front of it, a
// Queue's Write still returns at once, drops beyond its capacity and counts
// them; once the FIFO is read again every queued record arrives in order,
// with a history_dropped record where the hole is.
func TestQueue_BlockedFileNeverBlocksTheWriter(t *testing.T) {
	path := filepath.Join(t.TempDir(), "history.fifo")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
	// A reader end that reads nothing yet, so opening for writing succeeds.
	rfd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	f, err := history.OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	q := history.NewQueue(f, history.QueueOptions{Capacity: 50, Identity: "w1", Start: time.Now()})

	// ~200 bytes a record: 2,000 records are six times a 64 KiB pipe.
	const n = 2000
	done := make(chan int)
	go func() {
		failed := 0
		for i := range n {
			if q.Write(history.Record{T: time.Now().UTC().Format(time.RFC3339Nano), Identity: "w1", Event: "renewed", Term: int64(i + 1),
				Reason: "padding padding padding padding padding padding padding padding padding padding padding padding"}) != nil {
				failed++
			}
		}
		done <- failed
	}()
	var failed int
	select {
	case failed = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("2,000 history writes did not return within 10 s with the file blocked")
	}
	if failed == 0 || uint64(failed) != q.Dropped() {
		t.Fatalf("Write reported %d drops, Dropped() = %d: want the same, > 0 (the pipe holds far fewer than 2,000 records)", failed, q.Dropped())
	}

	// Read the FIFO again: everything queued is written, then Close returns.
	r := os.NewFile(uintptr(rfd), path)
	lines := make(chan []history.Record, 1)
	go func() {
		var got []history.Record
		for sc := bufio.NewScanner(r); sc.Scan(); {
			var rec history.Record
			if err := json.Unmarshal(sc.Bytes(), &rec); err == nil {
				got = append(got, rec)
			}
		}
		lines <- got
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := q.Close(ctx); err != nil {
		t.Fatalf("Close with the FIFO read again: %v", err)
	}
	f.Close() // EOF for the reader
	var got []history.Record
	select {
	case got = <-lines:
	case <-time.After(10 * time.Second):
		t.Fatal("reader did not finish")
	}
	r.Close()
	var written, announced int64
	last := int64(0)
	for _, rec := range got {
		if rec.Event == history.EventDropped {
			announced += rec.Dropped
			continue
		}
		if rec.Term <= last {
			t.Fatalf("record term %d after %d: order not kept", rec.Term, last)
		}
		last = rec.Term
		written++
	}
	if written+announced != n {
		t.Fatalf("%d written + %d announced as dropped = %d, want %d: records lost without a count", written, announced, written+announced, n)
	}
	if announced != int64(q.Dropped()) {
		t.Fatalf("history_dropped records announce %d, Dropped() = %d", announced, q.Dropped())
	}
	t.Logf("%d written, %d dropped and announced (%s)", written, announced, strconv.Itoa(len(got))+" lines")
}

// In the normal case nothing is lost: every record is written, in order.
func TestQueue_WritesEverythingWhenTheSinkKeepsUp(t *testing.T) {
	path := filepath.Join(t.TempDir(), "h.jsonl")
	f, err := history.OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	q := history.NewQueue(f, history.QueueOptions{}) // the default capacity holds them all
	for i := range 1000 {
		if err := q.Write(history.Record{Event: "renewed", Term: int64(i + 1)}); err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
	}
	if err := q.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	f.Close()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	n := int64(0)
	for sc.Scan() {
		var rec history.Record
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatal(err)
		}
		n++
		if rec.Term != n {
			t.Fatalf("record %d has term %d: order or completeness broken", n, rec.Term)
		}
	}
	if n != 1000 {
		t.Fatalf("%d records written, want 1000", n)
	}
}
