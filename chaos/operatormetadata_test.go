package chaos

import (
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/lease"
)

func TestOperatorMetadata_WritesTheTermUnderAHeldLeaseAndRestoresIt(t *testing.T) {
	direct, _ := fixtureStorage(t)
	if err := put(direct, "leader", 5*time.Second); err != nil {
		t.Fatal(err)
	}
	b := direct.NewBlobClient("leader")
	good := map[string]*string{"holder": to("w1"), "term": to("1795400000000"), "acquired": to("2026-11-24T00:00:00Z")}
	if _, err := b.SetMetadata(ctxT(t, 5*time.Second), good, nil); err != nil {
		t.Fatal(err)
	}
	holder, err := lease.NewBlobClient(b, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := holder.AcquireLease(ctxT(t, 5*time.Second), 60, nil); err != nil {
		t.Fatalf("holder acquire: %v", err)
	}

	f := &OperatorMetadata{Term: "1795400000000x", DropHolder: true, Blob: b}
	if f.Kind() != KindOperatorMetadata || f.Target() != TargetAll || f.BlobName() != containerNameOf(direct)+"/leader" {
		t.Fatalf("kind %q target %q blob %q", f.Kind(), f.Target(), f.BlobName())
	}
	if err := f.Inject(ctxT(t, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	md := metadataOf(t, b)
	if md["term"] != "1795400000000x" || md["holder"] != "" || md["acquired"] != "2026-11-24T00:00:00Z" {
		t.Fatalf("metadata after the write = %v; want the typo'd term, no holder, acquired kept", md)
	}
	if _, err := holder.RenewLease(ctxT(t, 5*time.Second), nil); err == nil {
		t.Fatal("the holder renewed a lease the operator broke to write")
	}
	if err := f.Inject(ctxT(t, time.Second)); err == nil {
		t.Fatal("a second Inject succeeded")
	}
	if err := f.Remove(ctxT(t, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	if md := metadataOf(t, b); md["term"] != "1795400000000" || md["holder"] != "w1" {
		t.Fatalf("metadata after Remove = %v; want the record as it was", md)
	}
	if err := f.Remove(ctxT(t, time.Second)); err != nil {
		t.Fatalf("second Remove: %v", err)
	}
	// A record stamped over the write is not put back (that would roll
	// the term back).
	g := &OperatorMetadata{DropHolder: true, Blob: b}
	if err := g.Inject(ctxT(t, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	stamped := map[string]*string{"holder": to("w2"), "term": to("1795400000001")}
	if _, err := b.SetMetadata(ctxT(t, 5*time.Second), stamped, nil); err != nil {
		t.Fatal(err)
	}
	if err := g.Remove(ctxT(t, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	if md := metadataOf(t, b); md["term"] != "1795400000001" || md["holder"] != "w2" {
		t.Fatalf("metadata after Remove over a stamped record = %v; want the stamped record kept", md)
	}
	if err := (&OperatorMetadata{Blob: b}).Inject(ctxT(t, time.Second)); err == nil {
		t.Fatal("a write of nothing was accepted")
	}
}

func metadataOf(t *testing.T, b *blob.Client) map[string]string {
	t.Helper()
	props, err := b.GetProperties(ctxT(t, 5*time.Second), nil)
	if err != nil {
		t.Fatal(err)
	}
	md := map[string]string{}
	for k, v := range props.Metadata {
		if v != nil {
			md[strings.ToLower(k)] = *v
		}
	}
	return md
}
