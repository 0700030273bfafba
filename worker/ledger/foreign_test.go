package ledger_test

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/streaming"
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

// A last segment replaced by content that is not a ledger (the wrong file
// uploaded, as a block blob or an append blob) is kept as found and
// reported once; the writer of a new term seals it under its term, marked
// not a ledger, and continues in the next segment after the last entry it
// can read. Readers skip it and name it. Before: Open failed with
// ErrCorrupt for every new term, until an operator moved the segment aside.
func TestLedger_ASegmentThatIsNotALedgerIsKeptAndTheLedgerGoesOn(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		n        int    // entries term 1 writes
		seg      string // the segment replaced
		appendBl bool   // replaced by an append blob (else a block blob)
		kept     int64  // entries of term 1 left readable
	}{
		{"first segment, block blob", 2, "00000001", false, 0},
		{"a later segment, block blob", 5, "00000002", false, 3},
		{"a later segment, append blob", 5, "00000002", true, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := newContainer(t)
			var told []string
			opts := ledger.Options{SegmentLimit: 3, OnNotALedger: func(seg int, blobType string) {
				told = append(told, fmt.Sprintf("%d %s", seg, blobType))
			}}
			w1, err := ledger.Open(ctxT(t), c, "leader", 1, "a", opts)
			if err != nil {
				t.Fatal(err)
			}
			appendN(t, w1, tc.n)
			name := ledger.Prefix("leader") + tc.seg
			if tc.appendBl {
				ab := c.NewAppendBlobClient(name)
				if _, err := ab.Delete(ctxT(t), nil); err != nil {
					t.Fatal(err)
				}
				if _, err := ab.Create(ctxT(t), nil); err != nil {
					t.Fatal(err)
				}
				if _, err := ab.AppendBlock(ctxT(t), streaming.NopCloser(strings.NewReader("not a ledger\n")), nil); err != nil {
					t.Fatal(err)
				}
			} else {
				reupload(t, c, tc.seg, []byte("not a ledger\n"))
			}
			if _, err := w1.Append(ctxT(t)); err == nil {
				t.Fatal("an append over the replaced segment succeeded")
			}
			w2, err := ledger.Open(ctxT(t), c, "leader", 2, "b", opts)
			if err != nil {
				t.Fatalf("Open of term 2 over a segment that is not a ledger: %v", err)
			}
			appendN(t, w2, 4)
			es := readVerified(t, c)
			if int64(len(es)) != tc.kept+4 || es[tc.kept].Term != 2 || es[tc.kept].Seq != tc.kept+1 {
				t.Fatalf("ledger = %+v, want %d entries of term 1 then 4 of term 2, contiguous", es, tc.kept)
			}
			if len(told) != 1 || !strings.HasPrefix(told[0], strings.TrimLeft(tc.seg, "0")+" ") {
				t.Fatalf("reported %v, want segment %s once", told, tc.seg)
			}
			segs, err := ledger.ListSegments(ctxT(t), c, "leader")
			if err != nil {
				t.Fatal(err)
			}
			var bad []string
			for _, s := range segs {
				if s.NotALedger {
					bad = append(bad, s.Name)
				}
			}
			if len(bad) != 1 || bad[0] != name {
				t.Fatalf("segments not a ledger %v, want only %s (segments %+v)", bad, name, segs)
			}
			// Kept as found.
			resp, err := c.NewBlobClient(name).DownloadStream(ctxT(t), nil)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if string(body) != "not a ledger\n" {
				t.Fatalf("the kept segment holds %q, want it as found", body)
			}
			if _, err := w1.Append(ctxT(t)); !errors.Is(err, ledger.ErrFenced) {
				t.Fatalf("the deposed writer's Append = %v, want ErrFenced", err)
			}
		})
	}
}
