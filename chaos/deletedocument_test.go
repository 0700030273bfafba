package chaos

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"
)

// The operator deletes a pool document; deleting it again deletes nothing
// and says so.
func TestDeleteDocument_DeletesTheDocument(t *testing.T) {
	direct, _ := fixtureStorage(t)
	const doc = "leader-shards/assignment"
	if err := put(direct, doc, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	f := &DeleteDocument{Container: direct, Blob: doc}
	if f.Kind() != KindDeleteDocument || f.Target() != TargetAll {
		t.Fatalf("kind %q target %q", f.Kind(), f.Target())
	}
	if err := f.Inject(ctxT(t, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	if exists(t, direct, doc) {
		t.Fatal("the document still exists after DeleteDocument")
	}
	if err := f.Inject(ctxT(t, time.Second)); !errors.Is(err, ErrInjected) {
		t.Fatalf("second Inject = %v, want ErrInjected", err)
	}
	if err := f.Remove(ctxT(t, time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := f.Inject(ctxT(t, 5*time.Second)); !bloberror.HasCode(err, bloberror.BlobNotFound) {
		t.Fatalf("delete of a missing document = %v, want BlobNotFound", err)
	}
	if err := (&DeleteDocument{Container: direct}).Inject(ctxT(t, time.Second)); !errors.Is(err, ErrNoTarget) {
		t.Fatalf("no blob: %v", err)
	}
	if err := put(direct, doc, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := (&DeleteDocument{Container: direct, Blob: doc}).Inject(ctx); err == nil {
		t.Fatal("Inject with a cancelled context succeeded")
	}
}
