package chaos

import (
	"errors"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/lease"
)

// The operator deletes a leased lock blob with its metadata: the holder's
// next renew finds no blob (404), and a recreated blob has no term.
func TestDeleteBlob_DeletesALeasedBlobAndItsTerm(t *testing.T) {
	direct, _ := fixtureStorage(t)
	if err := put(direct, "leader", 5*time.Second); err != nil {
		t.Fatal(err)
	}
	b := direct.NewBlobClient("leader")
	holder, err := lease.NewBlobClient(b, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := holder.AcquireLease(ctxT(t, 5*time.Second), 60, nil); err != nil {
		t.Fatal(err)
	}
	term := "9"
	if _, err := b.SetMetadata(ctxT(t, 5*time.Second), map[string]*string{"term": &term}, leaseCond(holder.LeaseID())); err != nil {
		t.Fatal(err)
	}
	f := &DeleteBlob{Blob: b}
	if f.Kind() != KindDeleteBlob || f.Target() != TargetAll || f.BlobName() != containerNameOf(direct)+"/leader" {
		t.Fatalf("kind %q target %q blob %q", f.Kind(), f.Target(), f.BlobName())
	}
	if err := f.Inject(ctxT(t, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	if exists(t, direct, "leader") {
		t.Fatal("the lock blob still exists after DeleteBlob")
	}
	if _, err := holder.RenewLease(ctxT(t, 5*time.Second), nil); !bloberror.HasCode(err, bloberror.BlobNotFound) {
		t.Fatalf("holder's renew after the delete = %v, want BlobNotFound", err)
	}
	if err := f.Inject(ctxT(t, time.Second)); !errors.Is(err, ErrInjected) {
		t.Fatalf("second Inject = %v, want ErrInjected", err)
	}
	if err := f.Remove(ctxT(t, time.Second)); err != nil {
		t.Fatal(err)
	}
	// Nothing left to delete is the operator's error, not a silent success.
	if err := f.Inject(ctxT(t, 5*time.Second)); !bloberror.HasCode(err, bloberror.BlobNotFound) {
		t.Fatalf("delete of a missing blob = %v, want BlobNotFound", err)
	}
	if err := (&DeleteBlob{}).Inject(ctxT(t, time.Second)); !errors.Is(err, ErrNoTarget) {
		t.Fatalf("no blob: %v", err)
	}
}

// A cancelled context stops the break-and-delete loop.
func TestDeleteBlob_HonoursCancellation(t *testing.T) {
	direct, _ := fixtureStorage(t)
	if err := put(direct, "leader", 5*time.Second); err != nil {
		t.Fatal(err)
	}
	f := &DeleteBlob{Blob: direct.NewBlobClient("leader")}
	ctx := ctxT(t, time.Nanosecond)
	<-ctx.Done()
	if err := f.Inject(ctx); err == nil {
		t.Fatal("Inject with an expired context succeeded")
	}
	if !exists(t, direct, "leader") {
		t.Fatal("the blob was deleted by an Inject whose context had ended")
	}
}
