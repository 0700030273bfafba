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
			sink := history.OpenBlob(c, identity, time.Now(), history.BlobOptions{FlushEvery: 100 * time.Millisecond})
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
	sink := history.OpenBlob(c, identity, time.Now(), history.BlobOptions{FlushEvery: 100 * time.Millisecond, MaxBuffer: 2 << 10})
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
