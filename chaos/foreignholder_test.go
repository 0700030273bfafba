package chaos

import (
	"errors"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/lease"
	"github.com/google/uuid"
)

// The tool breaks a contender's lease, holds the lease past its duration by
// renewing it, and releases it on Remove; nobody else can acquire between.
func TestForeignHolder_HoldsTheLeaseUntilRemoved(t *testing.T) {
	direct, _ := fixtureStorage(t)
	const lock = "leader"
	if _, err := direct.NewBlockBlobClient(lock).UploadBuffer(ctxT(t, 5*time.Second), nil, &blockblob.UploadBufferOptions{}); err != nil {
		t.Fatal(err)
	}
	contender := func() *lease.BlobClient {
		id := uuid.NewString()
		lc, err := lease.NewBlobClient(direct.NewBlobClient(lock), &lease.BlobClientOptions{LeaseID: &id})
		if err != nil {
			t.Fatal(err)
		}
		return lc
	}
	if _, err := contender().AcquireLease(ctxT(t, 5*time.Second), 15, nil); err != nil {
		t.Fatal(err)
	}
	f := &ForeignHolder{}
	f.SetStorage(direct, lock)
	if f.Kind() != KindForeignHolder || f.Target() != TargetAll {
		t.Fatalf("kind %q target %q", f.Kind(), f.Target())
	}
	if err := f.Inject(ctxT(t, 10*time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := f.Inject(ctxT(t, time.Second)); !errors.Is(err, ErrInjected) {
		t.Fatalf("second Inject = %v, want ErrInjected", err)
	}
	time.Sleep(17 * time.Second) // past the tool's own 15 s: it renewed
	if _, err := contender().AcquireLease(ctxT(t, 5*time.Second), 15, nil); err == nil {
		t.Fatal("a contender acquired the lease the tool holds")
	}
	if err := f.Remove(ctxT(t, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, err := contender().AcquireLease(ctxT(t, 5*time.Second), 15, nil); err != nil {
		t.Fatalf("after Remove a contender cannot acquire: %v", err)
	}
	if err := (&ForeignHolder{Duration: 5}).Inject(ctxT(t, time.Second)); !errors.Is(err, ErrNoTarget) {
		t.Fatalf("no blob: %v", err)
	}
}
