package ledger_test

import (
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/blobleader/blobleader/worker/ledger"
)

// A segment re-uploaded as a block blob (what `az storage blob upload`
// makes by default: the same lines, no metadata) takes no appends. The
// ledger treats it as foreign: the writer of a new term seals it and
// continues in the next segment; a writer that cannot tell whether a newer
// term stamped it hands on; one it cannot read is never written past.

// reupload replaces segment n with a block blob holding body (nil: its own
// lines) and no metadata.
func reupload(t *testing.T, c *container.Client, n string, body []byte) {
	t.Helper()
	name := ledger.Prefix("leader") + n
	if body == nil {
		resp, err := c.NewBlobClient(name).DownloadStream(ctxT(t), nil)
		if err != nil {
			t.Fatal(err)
		}
		body, err = io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.NewBlockBlobClient(name).UploadBuffer(ctxT(t), body, &blockblob.UploadBufferOptions{}); err != nil {
		t.Fatal(err)
	}
}

func TestLedger_ANewTermContinuesPastASegmentOfAnotherBlobType(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"first segment", "a later segment"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c := newContainer(t)
			opts := ledger.Options{SegmentLimit: 3}
			w1, err := ledger.Open(ctxT(t), c, "leader", 1, "a", opts)
			if err != nil {
				t.Fatal(err)
			}
			seg, n := "00000001", 2
			if name == "a later segment" {
				seg, n = "00000002", 5 // segment 1 full and sealed, two in segment 2
			}
			appendN(t, w1, n)
			reupload(t, c, seg, nil)

			// The writer whose segment it was cannot tell whether a newer
			// term's stamp went with the metadata: it hands on.
			if _, err := w1.Append(ctxT(t)); err == nil {
				t.Fatal("an append to a block blob succeeded")
			}
			if _, err := w1.Append(ctxT(t)); !errors.Is(err, ledger.ErrFenced) {
				t.Fatalf("the next Append = %v, want ErrFenced (hand on to a new term)", err)
			}
			// A new term continues after what is there.
			w2, err := ledger.Open(ctxT(t), c, "leader", 2, "b", opts)
			if err != nil {
				t.Fatalf("Open of term 2 over the re-uploaded segment: %v", err)
			}
			appendN(t, w2, 4)
			es := readVerified(t, c)
			if len(es) != n+4 || es[n].Term != 2 || es[n].Seq != int64(n+1) {
				t.Fatalf("ledger = %+v, want %d entries of term 1 then 4 of term 2, contiguous", es, n)
			}
			segs, err := ledger.ListSegments(ctxT(t), c, "leader")
			if err != nil {
				t.Fatal(err)
			}
			var foreign []string
			for _, s := range segs {
				if s.Foreign() {
					foreign = append(foreign, s.Name)
				}
			}
			if len(foreign) != 1 || !strings.HasSuffix(foreign[0], seg) {
				t.Fatalf("foreign segments %v, want only %s (segments %+v)", foreign, seg, segs)
			}
			// The old writer stays fenced.
			if _, err := w1.Append(ctxT(t)); !errors.Is(err, ledger.ErrFenced) {
				t.Fatalf("the deposed writer's Append = %v, want ErrFenced", err)
			}
		})
	}
}

func TestLedger_ASegmentNobodyCanReadIsNotWrittenPast(t *testing.T) {
	t.Parallel()
	c := newContainer(t)
	w1, err := ledger.Open(ctxT(t), c, "leader", 1, "a", ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	appendN(t, w1, 2)
	reupload(t, c, "00000001", []byte("not a ledger\n"))
	_, err = ledger.Open(ctxT(t), c, "leader", 2, "b", ledger.Options{})
	if !errors.Is(err, ledger.ErrCorrupt) {
		t.Fatalf("Open over an unreadable segment = %v, want ErrCorrupt", err)
	}
	segs, err := ledger.ListSegments(ctxT(t), c, "leader")
	if err != nil {
		t.Fatal(err)
	}
	if len(segs) != 1 {
		t.Fatalf("segments %+v: a writer went past a segment it cannot read", segs)
	}
	// Left as the operator wrote it, for the operator to repair.
	resp, err := c.NewBlobClient(ledger.Prefix("leader")+"00000001").GetProperties(ctxT(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Metadata) != 0 {
		t.Fatalf("the unreadable segment was stamped: %v", resp.Metadata)
	}
}
