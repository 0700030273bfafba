package chaos

import (
	"errors"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/lease"
)

// The operator deletes the container under a held lease: the holder's next
// renew finds no container (404), and everything in it is gone.
func TestDeleteContainer_DeletesItWithLeasedBlobs(t *testing.T) {
	direct, _ := fixtureStorage(t)
	if err := put(direct, "leader", 5*time.Second); err != nil {
		t.Fatal(err)
	}
	holder, err := lease.NewBlobClient(direct.NewBlobClient("leader"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := holder.AcquireLease(ctxT(t, 5*time.Second), 60, nil); err != nil {
		t.Fatal(err)
	}
	f := &DeleteContainer{Container: direct}
	if f.Kind() != KindDeleteContainer || f.Target() != TargetAll || f.ContainerName() != containerNameOf(direct) {
		t.Fatalf("kind %q target %q container %q", f.Kind(), f.Target(), f.ContainerName())
	}
	if err := f.Inject(ctxT(t, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, err := holder.RenewLease(ctxT(t, 5*time.Second), nil); !bloberror.HasCode(err, bloberror.ContainerNotFound) {
		t.Fatalf("holder's renew after the delete = %v, want ContainerNotFound", err)
	}
	if err := f.Remove(ctxT(t, time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := f.Inject(ctxT(t, 5*time.Second)); !bloberror.HasCode(err, bloberror.ContainerNotFound) {
		t.Fatalf("delete of a missing container = %v, want ContainerNotFound", err)
	}
	ctx := ctxT(t, time.Nanosecond)
	<-ctx.Done()
	if err := (&DeleteContainer{Container: direct}).Inject(ctx); err == nil {
		t.Fatal("Inject with an expired context succeeded")
	}
	if err := (&DeleteContainer{}).Inject(ctxT(t, time.Second)); !errors.Is(err, ErrNoTarget) {
		t.Fatalf("no container: %v", err)
	}
}
