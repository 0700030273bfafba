package chaos

import (
	"errors"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"
)

// One worker's history blobs go (the others stay); then the whole
// container; nothing to delete is an error.
func TestDeleteHistory_DeletesOneWorkersBlobsOrTheContainer(t *testing.T) {
	direct, _ := fixtureStorage(t)
	for _, name := range []string{"w1/1-0000.jsonl", "w1/1-0001.jsonl", "w2/1-0000.jsonl"} {
		if _, err := direct.NewAppendBlobClient(name).Create(ctxT(t, 5*time.Second), nil); err != nil {
			t.Fatal(err)
		}
	}
	f := &DeleteHistory{Container: direct, Identity: "w1"}
	if f.Kind() != KindDeleteHistory || f.Target() != TargetAll {
		t.Fatalf("kind %q target %q", f.Kind(), f.Target())
	}
	if err := f.Inject(ctxT(t, 5*time.Second)); err != nil || f.Deleted() != 2 {
		t.Fatalf("Inject = %v, deleted %d; want w1's 2 blobs", err, f.Deleted())
	}
	if err := f.Inject(ctxT(t, time.Second)); !errors.Is(err, ErrInjected) {
		t.Fatalf("second Inject = %v, want ErrInjected", err)
	}
	if _, err := direct.NewBlobClient("w2/1-0000.jsonl").GetProperties(ctxT(t, 5*time.Second), nil); err != nil {
		t.Fatalf("w2's blob went too: %v", err)
	}
	if err := f.Remove(ctxT(t, time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := (&DeleteHistory{Container: direct, Identity: "w1"}).Inject(ctxT(t, 5*time.Second)); !errors.Is(err, ErrNoTarget) {
		t.Fatalf("nothing left of w1: Inject = %v, want ErrNoTarget", err)
	}
	g := &DeleteHistory{Container: direct}
	if err := g.Inject(ctxT(t, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, err := direct.GetProperties(ctxT(t, 5*time.Second), nil); !bloberror.HasCode(err, bloberror.ContainerNotFound, bloberror.ContainerBeingDeleted) {
		t.Fatalf("the container after Inject: %v, want it gone", err)
	}
	if err := (&DeleteHistory{}).Inject(ctxT(t, time.Second)); !errors.Is(err, ErrNoTarget) {
		t.Fatalf("no container: %v", err)
	}
}
