package ledger_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/blobleader/blobleader/worker/azuritetest"
	"github.com/blobleader/blobleader/worker/election/bloblock"
	"github.com/blobleader/blobleader/worker/ledger"
)

var server *azuritetest.Server

func TestMain(m *testing.M) { azuritetest.RunMain(m, &server) }

var seq atomic.Int64

func newContainer(t *testing.T) *container.Client {
	t.Helper()
	c, err := bloblock.NewContainerClient(bloblock.ClientConfig{
		ConnectionString: server.ConnectionString(),
		Container:        fmt.Sprintf("l%d-%d", time.Now().UnixNano()%1e9, seq.Add(1)),
		RequestTimeout:   5 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func appendN(t *testing.T, w *ledger.Writer, n int) {
	t.Helper()
	for range n {
		if _, err := w.Append(ctxT(t)); err != nil {
			t.Fatalf("Append (term %d): %v", w.Term(), err)
		}
	}
}

func readVerified(t *testing.T, c *container.Client) []ledger.Entry {
	t.Helper()
	es, err := ledger.ReadAll(ctxT(t), c, "leader")
	if err != nil {
		t.Fatalf("ReadAll: %v", err)
	}
	if err := ledger.Verify(es); err != nil {
		t.Fatalf("Verify: %v\nentries: %+v", err, es)
	}
	return es
}

func TestLedger_DeposedWriterIsRefusedByStorage(t *testing.T) {
	t.Parallel()
	c := newContainer(t)
	old, err := ledger.Open(ctxT(t), c, "leader", 1, "a", ledger.Options{})
	if err != nil {
		t.Fatalf("Open term 1: %v", err)
	}
	appendN(t, old, 3)
	next, err := ledger.Open(ctxT(t), c, "leader", 2, "b", ledger.Options{})
	if err != nil {
		t.Fatalf("Open term 2: %v", err)
	}
	if _, err := old.Append(ctxT(t)); !errors.Is(err, ledger.ErrFenced) {
		t.Fatalf("deposed writer's Append = %v, want ErrFenced (storage must refuse it)", err)
	}
	appendN(t, next, 2)
	es := readVerified(t, c)
	if len(es) != 5 || es[2].Term != 1 || es[3].Term != 2 || es[3].Seq != 4 || es[4].Holder != "b" {
		t.Fatalf("ledger = %+v, want seq 1–3 term 1 by a, seq 4–5 term 2 by b", es)
	}
	// An older term can never take the ledger back.
	if _, err := ledger.Open(ctxT(t), c, "leader", 2, "c", ledger.Options{}); !errors.Is(err, ledger.ErrFenced) {
		t.Fatalf("Open with an equal term = %v, want ErrFenced", err)
	}
	if _, err := ledger.Open(ctxT(t), c, "leader", 1, "c", ledger.Options{}); !errors.Is(err, ledger.ErrFenced) {
		t.Fatalf("Open with an older term = %v, want ErrFenced", err)
	}
}

func TestLedger_RotatesSegmentsWithoutGaps(t *testing.T) {
	t.Parallel()
	c := newContainer(t)
	opts := ledger.Options{SegmentLimit: 3}
	w1, err := ledger.Open(ctxT(t), c, "leader", 1, "a", opts)
	if err != nil {
		t.Fatal(err)
	}
	appendN(t, w1, 7) // segments of 3, 3, 1
	w2, err := ledger.Open(ctxT(t), c, "leader", 2, "b", opts)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w1.Append(ctxT(t)); !errors.Is(err, ledger.ErrFenced) {
		t.Fatalf("deposed writer after rotation: %v, want ErrFenced", err)
	}
	appendN(t, w2, 5)
	es := readVerified(t, c)
	if len(es) != 12 {
		t.Fatalf("%d entries, want 12", len(es))
	}
}

func TestLedger_SealedSegmentIsContinuedByTheNextLeader(t *testing.T) {
	t.Parallel()
	c := newContainer(t)
	opts := ledger.Options{SegmentLimit: 2}
	w1, err := ledger.Open(ctxT(t), c, "leader", 1, "a", opts)
	if err != nil {
		t.Fatal(err)
	}
	appendN(t, w1, 2) // segment 1 full; the next append would seal it
	w2, err := ledger.Open(ctxT(t), c, "leader", 2, "b", opts)
	if err != nil {
		t.Fatal(err)
	}
	appendN(t, w2, 3)
	if es := readVerified(t, c); len(es) != 5 {
		t.Fatalf("%d entries, want 5", len(es))
	}
}

// A deposed leader appending as fast as it can while the new leader fences:
// whatever interleaving storage picks, the ledger has no gap or duplicate and
// the old writer is refused from the fence on.
func TestLedger_RaceBetweenDeposedAppendsAndFence(t *testing.T) {
	t.Parallel()
	for round := range 5 {
		c := newContainer(t)
		old, err := ledger.Open(ctxT(t), c, "leader", 1, "a", ledger.Options{SegmentLimit: 4})
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		stop := make(chan struct{})
		var oldErr error
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := old.Append(ctxT(t)); err != nil {
					oldErr = err
					return
				}
			}
		}()
		time.Sleep(time.Duration(round*10) * time.Millisecond) // vary the interleaving
		next, err := ledger.Open(ctxT(t), c, "leader", 2, "b", ledger.Options{SegmentLimit: 4})
		if err != nil {
			close(stop)
			wg.Wait()
			t.Fatalf("round %d: Open term 2 during appends: %v", round, err)
		}
		appendN(t, next, 3)
		close(stop)
		wg.Wait()
		if oldErr != nil && !errors.Is(oldErr, ledger.ErrFenced) {
			t.Fatalf("round %d: deposed writer failed with %v, want ErrFenced", round, oldErr)
		}
		if _, err := old.Append(ctxT(t)); !errors.Is(err, ledger.ErrFenced) {
			t.Fatalf("round %d: deposed writer after the fence: %v, want ErrFenced", round, err)
		}
		es := readVerified(t, c)
		if last := es[len(es)-1]; last.Term != 2 {
			t.Fatalf("round %d: last entry %+v, want term 2", round, last)
		}
	}
}

func TestVerify_Rejects(t *testing.T) {
	t.Parallel()
	at := time.Now()
	for _, tc := range []struct {
		name string
		es   []ledger.Entry
	}{
		{"gap", []ledger.Entry{{1, 1, "a", at}, {3, 1, "a", at}}},
		{"duplicate", []ledger.Entry{{1, 1, "a", at}, {1, 1, "a", at}}},
		{"term goes back", []ledger.Entry{{1, 2, "a", at}, {2, 1, "b", at}}},
		{"no holder", []ledger.Entry{{1, 1, "", at}}},
		{"does not start at 1", []ledger.Entry{{2, 1, "a", at}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := ledger.Verify(tc.es); !errors.Is(err, ledger.ErrCorrupt) {
				t.Fatalf("Verify = %v, want ErrCorrupt", err)
			}
		})
	}
	if err := ledger.Verify([]ledger.Entry{{1, 1, "a", at}, {2, 1, "a", at}, {3, 4, "b", at}}); err != nil {
		t.Fatalf("Verify of a good ledger = %v", err)
	}
}
