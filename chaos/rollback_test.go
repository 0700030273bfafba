package chaos

import (
	"bytes"
	"io"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/streaming"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/appendblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/lease"
)

func TestRollback_PutsTheLockAndTheLedgerBackAsTheyWere(t *testing.T) {
	direct, _ := fixtureStorage(t)
	if err := put(direct, "leader", 5*time.Second); err != nil {
		t.Fatal(err)
	}
	lock := direct.NewBlobClient("leader")
	setTerm := func(term string) {
		t.Helper()
		if _, err := lock.SetMetadata(ctxT(t, 5*time.Second), map[string]*string{"holder": to("w1"), "term": to(term)}, nil); err != nil {
			t.Fatal(err)
		}
	}
	appendLine := func(seg, line string) {
		t.Helper()
		ab := direct.NewAppendBlobClient("leader-ledger/" + seg)
		if !exists(t, direct, "leader-ledger/"+seg) {
			if _, err := ab.Create(ctxT(t, 5*time.Second), &appendblob.CreateOptions{Metadata: map[string]*string{"term": to("5")}}); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := ab.AppendBlock(ctxT(t, 5*time.Second), streaming.NopCloser(bytes.NewReader([]byte(line+"\n"))), nil); err != nil {
			t.Fatal(err)
		}
	}
	setTerm("5")
	appendLine("00000001", `{"seq":1}`)
	appendLine("00000001", `{"seq":2}`)

	f := &Rollback{Container: direct, LockBlob: "leader"}
	if f.Kind() != KindRollback || f.Target() != TargetAll {
		t.Fatalf("kind %q target %q", f.Kind(), f.Target())
	}
	if err := f.Inject(ctxT(t, time.Second)); err == nil {
		t.Fatal("Inject without a snapshot succeeded")
	}
	if err := f.Snapshot(ctxT(t, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	// Time moves on: a newer term under a lease, more entries, a new segment.
	setTerm("9")
	appendLine("00000001", `{"seq":3}`)
	appendLine("00000002", `{"seq":4}`)
	holder, _ := lease.NewBlobClient(lock, nil)
	if _, err := holder.AcquireLease(ctxT(t, 5*time.Second), 60, nil); err != nil {
		t.Fatal(err)
	}

	if err := f.Inject(ctxT(t, 10*time.Second)); err != nil {
		t.Fatal(err)
	}
	if md := metadataOf(t, lock); md["term"] != "5" {
		t.Fatalf("lock metadata after the rollback = %v, want term 5", md)
	}
	if exists(t, direct, "leader-ledger/00000002") {
		t.Fatal("a segment written after the snapshot survived the rollback")
	}
	resp, err := direct.NewBlobClient("leader-ledger/00000001").DownloadStream(ctxT(t, 5*time.Second), nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != "{\"seq\":1}\n{\"seq\":2}\n" || resp.BlobCommittedBlockCount == nil || *resp.BlobCommittedBlockCount != 2 {
		t.Fatalf("segment 1 after the rollback = %q (%v blocks), want the two entries of the snapshot, one a block", body, resp.BlobCommittedBlockCount)
	}
	if err := f.Remove(ctxT(t, time.Second)); err != nil {
		t.Fatal(err)
	}
}
