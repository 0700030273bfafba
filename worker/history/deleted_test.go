package history_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/blobleader/blobleader/worker/azuritetest"
	"github.com/blobleader/blobleader/worker/history"
)

// syncBuffer is a log destination tests read while the sink writes to it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) count(substr string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Count(s.b.String(), substr)
}

// The history blob — or the whole history container — deleted under a
// running sink: the sink makes a new blob (and the container) and goes on,
// its first record a history_dropped naming the records that went with the
// deleted blob, counted in Dropped; it says so in one warning, not one per
// flush. Before: a warning every flush for ever, nothing written, and the
// dropped counter at 0.
func TestBlob_DeletedBlobOrContainerIsRecreated(t *testing.T) {
	az := azuritetest.StartT(t)
	for _, tt := range []struct {
		name   string
		delete func(ctx context.Context, sink *history.Blob) error
	}{
		{"blob deleted", func(ctx context.Context, sink *history.Blob) error {
			_, err := historyClient(t, az.ConnectionString()).NewBlobClient(sink.Name()).Delete(ctx, nil)
			return err
		}},
		{"container deleted", func(ctx context.Context, _ *history.Blob) error {
			_, err := historyClient(t, az.ConnectionString()).Delete(ctx, nil)
			return err
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			c := historyClient(t, az.ConnectionString())
			logs := &syncBuffer{}
			identity := fmt.Sprintf("w-%d", time.Now().UnixNano())
			sink := openBlob(t, c, identity, time.Now(), history.BlobOptions{FlushEvery: 100 * time.Millisecond,
				Logger: slog.New(slog.NewTextHandler(logs, nil))})
			for i := range 10 {
				_ = sink.Write(history.Record{T: "x", Identity: identity, Event: fmt.Sprint(i)})
			}
			waitFor(t, ctx, "the first ten records in the blob", func() bool { return len(blobRecords(t, ctx, c, sink.Name())) == 10 })
			first := sink.Name()
			warned := logs.count("level=WARN") // a busy machine can time a flush out before the deletion
			if err := tt.delete(ctx, sink); err != nil {
				t.Fatal(err)
			}
			deleted := time.Now()
			for i := 10; i < 20; i++ {
				_ = sink.Write(history.Record{T: "x", Identity: identity, Event: fmt.Sprint(i)})
			}
			var got []history.Record
			waitFor(t, ctx, "the next ten records in a blob written again", func() bool {
				got = blobRecords(t, ctx, c, sink.Name())
				return len(got) > 0 && got[len(got)-1].Event == "19"
			})
			t.Logf("%s: a new blob %s (was %s) with the records after %v", tt.name, sink.Name(), first, time.Since(deleted).Round(time.Millisecond))
			// The new blob holds every record the deleted one did not take
			// with it, in order; the ones it took are announced first and
			// counted. (A batch whose answer the sink never learned is sent
			// again to the new blob: nothing of it is lost.)
			var announced int64
			if got[0].Event == history.EventDropped {
				announced = got[0].Dropped
				if !strings.Contains(got[0].Reason, "deleted") {
					t.Fatalf("history_dropped %+v does not name the deletion", got[0])
				}
				got = got[1:]
			}
			for i, r := range got {
				if r.Event != fmt.Sprint(int(announced)+i) {
					t.Fatalf("record %d of the new blob is %q, want %d (announced dropped: %d)", i, r.Event, int(announced)+i, announced)
				}
			}
			if d := sink.Dropped(); d != announced || announced+int64(len(got)) != 20 {
				t.Fatalf("Dropped() = %d, announced %d, %d records in the new blob: want every one of the 20 in it or announced and counted", d, announced, len(got))
			}
			time.Sleep(time.Second) // ten flush periods
			if n := logs.count("history blob gone"); n != 1 {
				t.Fatalf("%d warnings naming the deletion, want 1:\n%s", n, logs.b.String())
			}
			if n := logs.count("level=WARN") - warned; n > 3 {
				t.Fatalf("%d warnings after one deletion, want a few (not one per flush):\n%s", n, logs.b.String())
			}
			if err := sink.Close(ctx); (err == nil) != (announced == 0) {
				t.Fatalf("Close = %v with %d records lost", err, announced)
			}
		})
	}
}

// Records the sink could not write before Close gave up are lost: they are
// counted as dropped, not forgotten.
func TestBlob_RecordsUnwrittenAtCloseAreCounted(t *testing.T) {
	port := azuritetest.ReservePort(t) // nothing listens there
	c := historyClient(t, azuritetest.ConnectionString(fmt.Sprintf("http://127.0.0.1:%d/%s", port, azuritetest.Account)))
	logs := &syncBuffer{}
	sink := openBlob(t, c, "w1", time.Now(), history.BlobOptions{FlushEvery: 50 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(logs, nil))})
	for i := range 5 {
		_ = sink.Write(history.Record{T: "x", Identity: "w1", Event: fmt.Sprint(i)})
	}
	time.Sleep(time.Second) // twenty failed flushes
	if n := logs.count("level=WARN"); n > 2 {
		t.Fatalf("%d warnings in 20 failed flushes, want at most 2 (the first, then rate-limited):\n%s", n, logs.b.String())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if err := sink.Close(ctx); err == nil {
		t.Fatal("Close with storage down returned nil")
	}
	if d := sink.Dropped(); d != 5 {
		t.Fatalf("Dropped() = %d after Close gave up on 5 records, want 5", d)
	}
}
