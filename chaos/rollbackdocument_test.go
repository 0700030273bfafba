package chaos

import (
	"errors"
	"io"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"

	"github.com/blobleader/blobleader/worker/storage"
)

// A document put back to an earlier copy: body and metadata as they were
// at the snapshot, whatever was written since.
func TestRollbackDocument_PutsTheDocumentBackAsItWas(t *testing.T) {
	direct, _ := fixtureStorage(t)
	const doc = "leader-shards/assignment"
	write := func(body, term string) {
		t.Helper()
		if _, err := direct.NewBlockBlobClient(doc).UploadBuffer(ctxT(t, 5*time.Second), []byte(body),
			&blockblob.UploadBufferOptions{Metadata: map[string]*string{"term": to(term)}}); err != nil {
			t.Fatal(err)
		}
	}
	write(`{"term":5,"version":3}`, "5")
	f := &RollbackDocument{Container: direct, Blob: doc}
	if f.Kind() != KindDocumentRollback || f.Target() != TargetAll {
		t.Fatalf("kind %q target %q", f.Kind(), f.Target())
	}
	if err := f.Inject(ctxT(t, time.Second)); !errors.Is(err, ErrInvalid) {
		t.Fatalf("Inject without a snapshot = %v, want ErrInvalid", err)
	}
	if err := f.Snapshot(ctxT(t, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	write(`{"term":5,"version":9}`, "5")
	if err := f.Inject(ctxT(t, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	resp, err := direct.NewBlobClient(doc).DownloadStream(ctxT(t, 5*time.Second), nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != `{"term":5,"version":3}` || storage.MetadataValue(resp.Metadata, storage.MetaTerm) != "5" {
		t.Fatalf("document after the rollback = %s (metadata %v), want version 3 under term 5", body, resp.Metadata)
	}
	if err := f.Inject(ctxT(t, time.Second)); !errors.Is(err, ErrInjected) {
		t.Fatalf("second Inject = %v, want ErrInjected", err)
	}
	if err := f.Remove(ctxT(t, time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := (&RollbackDocument{Container: direct}).Snapshot(ctxT(t, time.Second)); !errors.Is(err, ErrNoTarget) {
		t.Fatalf("no blob: %v", err)
	}
}
