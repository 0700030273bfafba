package chaos

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/streaming"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/appendblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"

	"github.com/blobleader/blobleader/worker/storage"
)

// The last segment becomes a block blob with the same lines and no
// metadata: appends are refused with 409 InvalidBlobType. Remove puts the
// append blob back while nobody has touched the block blob.
func TestLedgerBlobType_ReplacesTheLastSegmentWithABlockBlob(t *testing.T) {
	direct, _ := fixtureStorage(t)
	seg := func(n string) *appendblob.Client { return direct.NewAppendBlobClient("leader-ledger/" + n) }
	for _, n := range []string{"00000001", "00000002"} {
		if _, err := seg(n).Create(ctxT(t, 5*time.Second), &appendblob.CreateOptions{Metadata: map[string]*string{"term": to("7")}}); err != nil {
			t.Fatal(err)
		}
		if _, err := seg(n).AppendBlock(ctxT(t, 5*time.Second), streaming.NopCloser(bytes.NewReader([]byte(`{"seq":1}`+"\n"))), nil); err != nil {
			t.Fatal(err)
		}
	}
	f := &LedgerBlobType{Container: direct, Ledger: "leader"}
	if f.Kind() != KindLedgerBlobType || f.Target() != TargetAll {
		t.Fatalf("kind %q target %q", f.Kind(), f.Target())
	}
	if err := f.Inject(ctxT(t, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	if f.Segment() != "leader-ledger/00000002" {
		t.Fatalf("replaced %q, want the last segment", f.Segment())
	}
	props, err := direct.NewBlobClient(f.Segment()).GetProperties(ctxT(t, 5*time.Second), nil)
	if err != nil {
		t.Fatal(err)
	}
	if props.BlobType == nil || *props.BlobType != blob.BlobTypeBlockBlob || len(props.Metadata) != 0 {
		t.Fatalf("segment after the fault: type %v metadata %v, want a block blob without metadata", props.BlobType, props.Metadata)
	}
	if body, _ := readDoc(t, direct, f.Segment()); body != `{"seq":1}`+"\n" {
		t.Fatalf("segment body = %q, want the lines kept", body)
	}
	_, err = seg("00000002").AppendBlock(ctxT(t, 5*time.Second), streaming.NopCloser(bytes.NewReader([]byte("x\n"))), nil)
	if !bloberror.HasCode(err, bloberror.InvalidBlobType) {
		t.Fatalf("append to the replaced segment = %v, want 409 InvalidBlobType", err)
	}
	if err := f.Inject(ctxT(t, time.Second)); !errors.Is(err, ErrInjected) {
		t.Fatalf("second Inject = %v, want ErrInjected", err)
	}
	if err := f.Remove(ctxT(t, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	props, err = direct.NewBlobClient(f.Segment()).GetProperties(ctxT(t, 5*time.Second), nil)
	if err != nil {
		t.Fatal(err)
	}
	if *props.BlobType != blob.BlobTypeAppendBlob || storage.MetadataValue(props.Metadata, storage.MetaTerm) != "7" {
		t.Fatalf("segment after Remove: type %v metadata %v, want the append blob back with its term", *props.BlobType, props.Metadata)
	}
	if _, err := seg("00000002").AppendBlock(ctxT(t, 5*time.Second), streaming.NopCloser(bytes.NewReader([]byte(`{"seq":2}`+"\n"))), nil); err != nil {
		t.Fatalf("append after Remove: %v", err)
	}

	// A writer that moved past it (here: stamped it) has repaired the
	// ledger: Remove leaves the segment as it is.
	g := &LedgerBlobType{Container: direct, Ledger: "leader"}
	if err := g.Inject(ctxT(t, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, err := direct.NewBlobClient(g.Segment()).SetMetadata(ctxT(t, 5*time.Second), map[string]*string{"term": to("8"), "sealed": to("true")}, nil); err != nil {
		t.Fatal(err)
	}
	if err := g.Remove(ctxT(t, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	props, err = direct.NewBlobClient(g.Segment()).GetProperties(ctxT(t, 5*time.Second), nil)
	if err != nil {
		t.Fatal(err)
	}
	if *props.BlobType != blob.BlobTypeBlockBlob || storage.MetadataValue(props.Metadata, storage.MetaTerm) != "8" {
		t.Fatalf("Remove after a repair: type %v metadata %v, want the repaired block blob left alone", *props.BlobType, props.Metadata)
	}

	// The wrong file uploaded: other content, restored by Remove.
	h := &LedgerBlobType{Container: direct, Ledger: "leader", Content: "not a ledger\n"}
	lines, _ := readDoc(t, direct, g.Segment())
	if err := h.Inject(ctxT(t, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	if body, _ := readDoc(t, direct, h.Segment()); body != "not a ledger\n" {
		t.Fatalf("segment body = %q, want the content verbatim", body)
	}
	if err := h.Remove(ctxT(t, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	if body, _ := readDoc(t, direct, h.Segment()); body != lines {
		t.Fatalf("segment body after Remove = %q, want the lines back (%q)", body, lines)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := (&LedgerBlobType{Container: direct, Ledger: "leader"}).Inject(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Inject with a cancelled context = %v, want context.Canceled", err)
	}
	if err := (&LedgerBlobType{Container: direct, Ledger: "nothing"}).Inject(ctxT(t, 5*time.Second)); !errors.Is(err, ErrNoTarget) {
		t.Fatalf("a ledger without segments: %v, want ErrNoTarget", err)
	}
}
