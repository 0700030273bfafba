package history_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/blobleader/blobleader/worker/azuritetest"
	"github.com/blobleader/blobleader/worker/election/bloblock"
	"github.com/blobleader/blobleader/worker/history"
	"github.com/blobleader/blobleader/worker/internal/faultinject"
	"github.com/blobleader/blobleader/worker/stalltest"
	"github.com/blobleader/blobleader/worker/storage"
)

// An append (or a create) whose outcome the sink did not learn — the answer
// lost, or the request held in the network and delivered after the sink
// gave up on it — is written exactly once: the records come out once each,
// in order. Real Azurite behind a fault-injecting transport.
func TestBlob_WriteWhoseAnswerWasLostIsNotWrittenTwice(t *testing.T) {
	az := azuritetest.StartT(t)
	for _, tt := range []struct {
		name string
		op   string
		mode faultinject.Mode
	}{
		{"append applied, answer lost", "history_append", faultinject.LoseResponse},
		{"append delivered after the sink gave up on it", "history_append", faultinject.DeliverLate},
		{"append never sent", "history_append", faultinject.FailBeforeSend},
		{"create applied, answer lost", "history_create", faultinject.LoseResponse},
		{"create delivered after the sink gave up on it", "history_create", faultinject.DeliverLate},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			f := faultinject.New()
			c := faultyHistoryClient(t, az, f)
			f.Arm(tt.op, 1, tt.mode)
			identity := fmt.Sprintf("w-%d", time.Now().UnixNano())
			sink := openBlob(t, c, identity, time.Now(), history.BlobOptions{FlushEvery: 100 * time.Millisecond})
			for i := range 10 {
				_ = sink.Write(history.Record{T: "x", Identity: identity, Event: fmt.Sprint(i)})
			}
			// Let the sink meet the fault and flush the ten after it.
			waitFor(t, ctx, "fault, then the first ten records in the blob", func() bool {
				return len(f.Hits()) == 1 && len(blobRecords(t, ctx, c, sink.Name())) >= 10
			})
			for i := 10; i < 20; i++ {
				_ = sink.Write(history.Record{T: "x", Identity: identity, Event: fmt.Sprint(i)})
			}
			if err := sink.Close(ctx); err != nil {
				t.Fatalf("Close: %v", err)
			}
			got := blobRecords(t, ctx, c, sink.Name())
			events := make([]string, len(got))
			for i, r := range got {
				events[i] = r.Event
			}
			if len(got) != 20 {
				t.Fatalf("%d records in the blob, want the 20 written once each (injected: %v): %v", len(got), f.Hits(), events)
			}
			for i, r := range got {
				if r.Event != fmt.Sprint(i) {
					t.Fatalf("record %d is %q, want %d (injected: %v): %v", i, r.Event, i, f.Hits(), events)
				}
			}
		})
	}
}

func faultyHistoryClient(t *testing.T, az *azuritetest.Server, f *faultinject.Injector) *container.Client {
	t.Helper()
	c, err := bloblock.NewContainerClient(bloblock.ClientConfig{ConnectionString: az.ConnectionString(),
		Container: history.Container, RequestTimeout: time.Second, Transport: f})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// blobRecords reads the records in blob name; none when it cannot be read.
func blobRecords(t *testing.T, ctx context.Context, c *container.Client, name string) []history.Record {
	t.Helper()
	resp, err := c.NewAppendBlobClient(name).DownloadStream(storage.WithOp(ctx, "test_read"), nil)
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	return readLines(t, resp.Body)
}

// openBlob opens a sink that is closed when the test ends, so a test that
// fails before its own Close does not leave the flusher running.
func openBlob(t *testing.T, c *container.Client, identity string, start time.Time, opts history.BlobOptions) *history.Blob {
	t.Helper()
	sink := history.OpenBlob(c, identity, start, opts)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = sink.Close(ctx)
	})
	return sink
}

// waitFor polls cond every 20 ms until it holds, failing when ctx ends.
func waitFor(t *testing.T, ctx context.Context, what string, cond func() bool) {
	t.Helper()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("no %s before the deadline", what)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// While a batch whose answer was lost waits to be sent again, the buffer
// overflows: the batch still lands once, the records dropped are announced
// after it, and every record is either in the blob once, in order, or
// counted as dropped.
func TestBlob_LostAnswerThenOverflowKeepsEveryRecordOnceOrCounted(t *testing.T) {
	az := azuritetest.StartT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	f := faultinject.New()
	c := faultyHistoryClient(t, az, f)
	f.Arm("history_append", 1, faultinject.LoseResponse)
	for n := 2; n <= 4; n++ {
		f.Arm("history_append", n, faultinject.FailBeforeSend)
	}
	identity := fmt.Sprintf("w-%d", time.Now().UnixNano())
	sink := openBlob(t, c, identity, time.Now(), history.BlobOptions{FlushEvery: 100 * time.Millisecond, MaxBuffer: 2 << 10})
	const total = 510
	for i := range 10 {
		_ = sink.Write(history.Record{T: "x", Identity: identity, Event: fmt.Sprint(i)})
	}
	waitFor(t, ctx, "the lost append and a failed resend", func() bool { return f.Seen("history_append") >= 2 })
	for i := 10; i < total; i++ {
		_ = sink.Write(history.Record{T: "x", Identity: identity, Event: fmt.Sprint(i)})
	}
	if err := sink.Close(ctx); err == nil || !strings.Contains(err.Error(), "dropped") {
		t.Fatalf("Close after drops = %v, want an error naming the drops", err)
	}
	got := blobRecords(t, ctx, c, sink.Name())
	kept, announced, last := 0, int64(0), -1
	for i, r := range got {
		if r.Event == history.EventDropped {
			announced += r.Dropped
			continue
		}
		n, err := strconv.Atoi(r.Event)
		if err != nil || n <= last {
			t.Fatalf("record %d is %q after %d: repeated or out of order (injected: %v)", i, r.Event, last, f.Hits())
		}
		if n < 10 && n != last+1 {
			t.Fatalf("record %d is %q: one of the first ten (in the batch whose answer was lost) is missing", i, r.Event)
		}
		last = n
		kept++
	}
	if announced == 0 || announced != sink.Dropped() {
		t.Fatalf("the blob announces %d dropped records, the sink counted %d", announced, sink.Dropped())
	}
	if int64(kept)+announced != total {
		t.Fatalf("%d records kept + %d dropped != %d written (injected: %v)", kept, announced, total, f.Hits())
	}
	if last != total-1 {
		t.Fatalf("last record %d, want the newest (%d) kept", last, total-1)
	}
}

func TestBlob_FlushesEverySecondInOrderAndOnClose(t *testing.T) {
	stalltest.Run(t, func(t *testing.T, sp *stalltest.Probe) {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		az := azuritetest.StartT(t)
		c := historyClient(t, az.ConnectionString())
		sink := openBlob(t, c, "w1", time.Now(), history.BlobOptions{FlushEvery: 200 * time.Millisecond})
		for i := range 50 {
			_ = sink.Write(history.Record{T: "x", Identity: "w1", Event: fmt.Sprint(i)})
		}
		// Flushed without Close, within a couple of flush periods: bound 5 s
		// (25 periods), judged with the stall the CPU probe measured in it
		// (a sink or an Azurite starved of the CPU flushes late, no defect).
		const bound = 5 * time.Second
		began := time.Now()
		var got []history.Record
		for len(got) < 50 {
			if now := time.Now(); now.After(began.Add(bound + sp.StallIn(began, now))) {
				t.Fatalf("only %d of 50 records in the blob %v after the writes without Close (bound %v, plus the %v the machine stalled)",
					len(got), now.Sub(began).Round(time.Millisecond), bound, sp.StallIn(began, now).Round(time.Millisecond))
			}
			time.Sleep(100 * time.Millisecond)
			if resp, err := c.NewAppendBlobClient(sink.Name()).DownloadStream(ctx, nil); err == nil {
				got = readLines(t, resp.Body)
				resp.Body.Close()
			}
		}
		if !sp.Bound(t, "the flush of 50 records without Close", began, bound, time.Now()) {
			return
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
	})
}

func TestBlob_WriteNeverBlocksWhenStorageIsDown(t *testing.T) {
	stalltest.Run(t, func(t *testing.T, sp *stalltest.Probe) {
		port := azuritetest.ReservePort(t) // nothing listens there
		c := historyClient(t, azuritetest.ConnectionString(fmt.Sprintf("http://127.0.0.1:%d/%s", port, azuritetest.Account)))
		sink := openBlob(t, c, "w1", time.Now(), history.BlobOptions{FlushEvery: 50 * time.Millisecond, MaxBuffer: 10 << 10})
		start := time.Now()
		for i := range 20000 {
			_ = sink.Write(history.Record{T: "x", Identity: "w1", Event: fmt.Sprint(i)})
		}
		if !sp.Bound(t, "20,000 writes with storage down, which must not block (bound 2 s)", start, 2*time.Second, time.Now()) {
			return
		}
		if sink.Dropped() == 0 {
			t.Fatal("a 10 KiB buffer held 20,000 records: nothing was dropped or counted")
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if err := sink.Close(ctx); err == nil {
			t.Fatal("Close with storage down and records dropped returned nil")
		}
	})
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
	sink := openBlob(t, c, "w1", time.Now(), history.BlobOptions{FlushEvery: time.Hour, MaxBuffer: 2 << 10})
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

// Close may be called again (a test's cleanup after its own Close, a
// shutdown path reached twice): it does not panic, writes nothing more, and
// gives the first call's answer.
func TestBlob_CloseAgainGivesTheFirstAnswer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	az := azuritetest.StartT(t)
	c := historyClient(t, az.ConnectionString())
	sink := history.OpenBlob(c, "w1", time.Now(), history.BlobOptions{FlushEvery: time.Hour, MaxBuffer: 2 << 10})
	for i := range 500 {
		_ = sink.Write(history.Record{T: "x", Identity: "w1", Event: fmt.Sprint(i)})
	}
	first := sink.Close(ctx)
	if first == nil {
		t.Fatal("Close after drops returned nil")
	}
	again := sink.Close(ctx)
	if again == nil || again.Error() != first.Error() {
		t.Fatalf("second Close = %v, want the first's answer %q", again, first)
	}
}
