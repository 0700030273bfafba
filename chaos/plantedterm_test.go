package chaos

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"

	"github.com/blobleader/blobleader/worker/storage"
)

// The term goes above the lock's, in the JSON and the metadata (the rest of
// the document as it was), or in the metadata alone (content and blob type
// kept); Remove puts the document back unless its owner rewrote it.
func TestPlantedTerm_PlantsAboveTheLocksTermAndRestoresUnlessRepaired(t *testing.T) {
	direct, _ := fixtureStorage(t)
	const lock, doc = "leader", "leader-shards/assignment"
	if _, err := direct.NewBlockBlobClient(lock).UploadBuffer(ctxT(t, 5*time.Second), nil,
		&blockblob.UploadBufferOptions{Metadata: map[string]*string{"term": to("100"), "holder": to("w1")}}); err != nil {
		t.Fatal(err)
	}
	good := `{"term":100,"version":3,"owners":["w1","w2"]}`
	write := func(body string) {
		t.Helper()
		if _, err := direct.NewBlockBlobClient(doc).UploadBuffer(ctxT(t, 5*time.Second), []byte(body),
			&blockblob.UploadBufferOptions{Metadata: map[string]*string{"term": to("100"), "other": to("kept")}}); err != nil {
			t.Fatal(err)
		}
	}
	write(good)
	f := &PlantedTerm{Blob: doc, Above: 5}
	f.SetStorage(direct, lock)
	if f.Kind() != KindPlantedTerm || f.Target() != TargetAll {
		t.Fatalf("kind %q target %q", f.Kind(), f.Target())
	}
	if err := f.Inject(ctxT(t, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	body, md := readDoc(t, direct, doc)
	var got struct {
		Term    int64    `json:"term"`
		Version int64    `json:"version"`
		Owners  []string `json:"owners"`
	}
	if err := json.Unmarshal([]byte(body), &got); err != nil || got.Term != 105 || got.Version != 3 || len(got.Owners) != 2 ||
		storage.MetadataValue(md, storage.MetaTerm) != "105" || storage.MetadataValue(md, "other") != "kept" || f.Planted() != 105 {
		t.Fatalf("document after the plant = %s (metadata %v, planted %d); want term 105 in JSON and metadata, the rest kept", body, md, f.Planted())
	}
	if err := f.Inject(ctxT(t, time.Second)); !errors.Is(err, ErrInjected) {
		t.Fatalf("second Inject = %v, want ErrInjected", err)
	}
	if err := f.Remove(ctxT(t, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	if body, md := readDoc(t, direct, doc); body != good || storage.MetadataValue(md, storage.MetaTerm) != "100" {
		t.Fatalf("document after Remove = %q (metadata %v), want it as it was", body, md)
	}

	// In the metadata only; the owner repairs it before Remove.
	g := &PlantedTerm{Blob: doc, MetadataOnly: true}
	g.SetStorage(direct, lock)
	if err := g.Inject(ctxT(t, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	if body, md := readDoc(t, direct, doc); body != good || storage.MetadataValue(md, storage.MetaTerm) != "1000000100" {
		t.Fatalf("document = %q (metadata %v), want the content kept and term 100 + DefaultPlantAbove in the metadata", body, md)
	}
	repaired := `{"term":100,"version":4}`
	write(repaired)
	if err := g.Remove(ctxT(t, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	if body, _ := readDoc(t, direct, doc); body != repaired {
		t.Fatalf("Remove over a repaired document left %q, want the repair %q", body, repaired)
	}
	if err := (&PlantedTerm{Container: direct, LockBlob: lock}).Inject(ctxT(t, time.Second)); !errors.Is(err, ErrNoTarget) {
		t.Fatalf("no blob: %v", err)
	}
}
