package chaos

import (
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/lease"
)

func TestBreakLease_FreesTheLeaseAtOnce(t *testing.T) {
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
		t.Fatalf("holder acquire: %v", err)
	}
	rival, _ := lease.NewBlobClient(b, nil)
	if _, err := rival.AcquireLease(ctxT(t, 5*time.Second), 15, nil); !bloberror.HasCode(err, bloberror.LeaseAlreadyPresent) {
		t.Fatalf("rival acquire before the break = %v, want LeaseAlreadyPresent", err)
	}

	f := &BreakLease{Blob: b}
	if f.Kind() != KindBreak || f.Target() != TargetAll || f.BlobName() != containerNameOf(direct)+"/leader" {
		t.Fatalf("kind %q target %q blob %q", f.Kind(), f.Target(), f.BlobName())
	}
	if err := f.Inject(ctxT(t, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	// The 60 s lease is free at once: the rival gets it, and the holder only
	// learns at its next renew.
	if _, err := rival.AcquireLease(ctxT(t, 5*time.Second), 15, nil); err != nil {
		t.Fatalf("rival acquire after the break: %v", err)
	}
	if _, err := holder.RenewLease(ctxT(t, 5*time.Second), nil); err == nil {
		t.Fatal("the old holder renewed a broken lease")
	}
	if err := f.Remove(ctxT(t, time.Second)); err != nil {
		t.Fatal(err)
	}
}

func TestBreakLease_NoLeaseIsAnError(t *testing.T) {
	direct, _ := fixtureStorage(t)
	if err := put(direct, "free", 5*time.Second); err != nil {
		t.Fatal(err)
	}
	f := &BreakLease{Blob: direct.NewBlobClient("free")}
	if err := f.Inject(ctxT(t, 5*time.Second)); !bloberror.HasCode(err, bloberror.LeaseNotPresentWithLeaseOperation) {
		t.Fatalf("break of an unleased blob = %v, want LeaseNotPresentWithLeaseOperation", err)
	}
	if err := (&BreakLease{Blob: direct.NewBlobClient("free"), BreakPeriod: 61}).Inject(ctxT(t, time.Second)); err == nil {
		t.Fatal("break period 61 s accepted")
	}
}
