package chaos

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/blobleader/blobleader/worker/storage"
)

// The document is cut in half (not JSON any more) keeping its metadata;
// Remove puts it back while the blob still holds the corruption, and leaves
// a document its owner has rewritten since.
func TestCorruptDocument_CutsTheDocumentAndRestoresItUnlessRepaired(t *testing.T) {
	direct, _ := fixtureStorage(t)
	const doc = "leader-shards/assignment"
	good := `{"term":5,"version":3,"owners":["w1","w2"]}`
	write := func(body string) {
		t.Helper()
		if _, err := direct.NewBlockBlobClient(doc).UploadBuffer(ctxT(t, 5*time.Second), []byte(body),
			&blockblob.UploadBufferOptions{Metadata: map[string]*string{"term": to("5")}}); err != nil {
			t.Fatal(err)
		}
	}
	write(good)
	f := &CorruptDocument{Container: direct, Blob: doc}
	if f.Kind() != KindCorruptDocument || f.Target() != TargetAll {
		t.Fatalf("kind %q target %q", f.Kind(), f.Target())
	}
	if err := f.Inject(ctxT(t, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	body, md := readDoc(t, direct, doc)
	if json.Valid([]byte(body)) || body != good[:len(good)/2] || storage.MetadataValue(md, storage.MetaTerm) != "5" {
		t.Fatalf("document after the corruption = %q (metadata %v); want its first half, not JSON, term kept", body, md)
	}
	if err := f.Inject(ctxT(t, time.Second)); !errors.Is(err, ErrInjected) {
		t.Fatalf("second Inject = %v, want ErrInjected", err)
	}
	if err := f.Remove(ctxT(t, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	if body, _ := readDoc(t, direct, doc); body != good {
		t.Fatalf("document after Remove = %q, want it as it was", body)
	}

	// Verbatim content without metadata; the owner repairs it before Remove.
	g := &CorruptDocument{Container: direct, Blob: doc, Content: "not json", DropMetadata: true}
	if err := g.Inject(ctxT(t, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	if body, md := readDoc(t, direct, doc); body != "not json" || len(md) != 0 {
		t.Fatalf("document = %q (metadata %v), want the content verbatim and no metadata", body, md)
	}
	repaired := `{"term":5,"version":4}`
	write(repaired)
	if err := g.Remove(ctxT(t, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	if body, _ := readDoc(t, direct, doc); body != repaired {
		t.Fatalf("Remove over a repaired document left %q, want the repair %q", body, repaired)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := (&CorruptDocument{Container: direct, Blob: doc}).Inject(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Inject with a cancelled context = %v, want context.Canceled", err)
	}
	if err := (&CorruptDocument{Container: direct}).Inject(ctxT(t, time.Second)); !errors.Is(err, ErrNoTarget) {
		t.Fatalf("no blob: %v", err)
	}
}

func readDoc(t *testing.T, c *container.Client, name string) (string, map[string]*string) {
	t.Helper()
	resp, err := c.NewBlobClient(name).DownloadStream(ctxT(t, 5*time.Second), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b), resp.Metadata
}
