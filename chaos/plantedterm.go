package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/blobleader/blobleader/worker/storage"
)

// PlantedTerm is a document that carries a term above the lock's — an
// operator's upload of a copy from another pool, a restore from a backup of
// a later deployment, a hand edit: the document is otherwise as it was. By
// default the JSON's "term" field and the metadata term are both set to the
// lock's term plus Above; MetadataOnly sets only the metadata term (a
// `az storage blob metadata update`), which also works on a ledger segment
// (its content and blob type stay). A term read from a document is data,
// never an order: nobody may step down for it. The write is conditioned on
// the ETag it read. Remove puts the document back, but only while the blob
// still holds what Inject wrote: once its owner has repaired it, there is
// nothing to undo.
type PlantedTerm struct {
	Container    *container.Client `json:"-"`                      // reached directly
	LockBlob     string            `json:"lockBlob,omitempty"`     // the lock whose term is planted above; SetStorage fills it
	Blob         string            `json:"blob"`                   // the document, e.g. "leader-shards/assignment"
	Above        int64             `json:"above,omitempty"`        // how far above the lock's term; default 1,000,000,000 (≈ 11.6 days of the term floor's milliseconds)
	MetadataOnly bool              `json:"metadataOnly,omitempty"` // plant the term in the metadata only

	place
	planted int64
	before  []byte             // the document Inject replaced (nil: metadata only)
	md      map[string]*string // and its metadata
	ctype   *string
	wrote   azcore.ETag // the ETag of Inject's write
}

// KindPlantedTerm: a document carrying a term above the lock's.
const KindPlantedTerm Kind = "planted_term"

var _ Fault = (*PlantedTerm)(nil)

// DefaultPlantAbove is PlantedTerm's default distance above the lock's term.
const DefaultPlantAbove = 1_000_000_000

func (f *PlantedTerm) SetStorage(c *container.Client, lockBlob string) {
	f.Container = c
	if f.LockBlob == "" {
		f.LockBlob = lockBlob
	}
}

func (f *PlantedTerm) Kind() Kind { return KindPlantedTerm }

// Target is TargetAll: whoever reads the document meets it.
func (f *PlantedTerm) Target() string { return TargetAll }

// Planted is the term Inject wrote (0 before).
func (f *PlantedTerm) Planted() int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.planted
}

// Inject plants the term, reading again and retrying while a writer races
// it, within ctx.
func (f *PlantedTerm) Inject(ctx context.Context) error {
	if f.Container == nil || f.Blob == "" || f.LockBlob == "" {
		return fmt.Errorf("%w: planted_term needs the container, the lock blob and the document's blob", ErrNoTarget)
	}
	if f.Above < 0 {
		return fmt.Errorf("%w: planted_term above %d must be ≥ 0", ErrInvalid, f.Above)
	}
	return f.putIn("", func() error {
		if err := whileRaced(ctx, f.plant); err != nil {
			return fmt.Errorf("chaos: planted term %s: %w", f.Blob, err)
		}
		return nil
	})
}

func (f *PlantedTerm) plant(ctx context.Context) error {
	lock, err := f.Container.NewBlobClient(f.LockBlob).GetProperties(ctx, nil)
	if err != nil {
		return fmt.Errorf("read the lock's term: %w", err)
	}
	lockTerm, err := storage.Term(lock.Metadata)
	if err != nil {
		return fmt.Errorf("the lock's term: %w", err)
	}
	above := f.Above
	if above == 0 {
		above = DefaultPlantAbove
	}
	planted := lockTerm + above
	t := strconv.FormatInt(planted, 10)
	if f.MetadataOnly {
		props, err := f.Container.NewBlobClient(f.Blob).GetProperties(ctx, nil)
		if err != nil {
			return err
		}
		md := withTerm(props.Metadata, t)
		resp, err := f.Container.NewBlobClient(f.Blob).SetMetadata(ctx, md, &blob.SetMetadataOptions{AccessConditions: ifMatch(props.ETag)})
		if err != nil {
			return err
		}
		f.planted, f.before, f.md, f.wrote = planted, nil, props.Metadata, *resp.ETag
		return nil
	}
	resp, body, err := download(ctx, f.Container.NewBlobClient(f.Blob))
	if err != nil {
		return err
	}
	var doc map[string]any
	if err := json.Unmarshal(body, &doc); err != nil {
		return fmt.Errorf("%w: %s is not a JSON document: %v", ErrInvalid, f.Blob, err)
	}
	doc["term"] = planted
	bad, _ := json.Marshal(doc)
	up, err := f.Container.NewBlockBlobClient(f.Blob).UploadBuffer(ctx, bad, &blockblob.UploadBufferOptions{
		Metadata: withTerm(resp.Metadata, t), HTTPHeaders: &blob.HTTPHeaders{BlobContentType: resp.ContentType},
		AccessConditions: ifMatch(resp.ETag),
	})
	if err != nil {
		return err
	}
	f.planted, f.before, f.md, f.ctype, f.wrote = planted, body, resp.Metadata, resp.ContentType, *up.ETag
	return nil
}

// withTerm is md with its term (any case) replaced by t.
func withTerm(md map[string]*string, t string) map[string]*string {
	out := map[string]*string{storage.MetaTerm: &t}
	for k, v := range md {
		if !strings.EqualFold(k, storage.MetaTerm) {
			out[k] = v
		}
	}
	return out
}

// Remove puts the document (or its metadata) back as Inject found it, if
// the blob still holds Inject's write; otherwise its owner has written it
// since and Remove leaves it.
func (f *PlantedTerm) Remove(ctx context.Context) error {
	return f.takeOut(func() error {
		var err error
		if f.before == nil {
			_, err = f.Container.NewBlobClient(f.Blob).SetMetadata(ctx, f.md, &blob.SetMetadataOptions{AccessConditions: ifMatch(&f.wrote)})
		} else {
			_, err = f.Container.NewBlockBlobClient(f.Blob).UploadBuffer(ctx, f.before, &blockblob.UploadBufferOptions{
				Metadata: f.md, HTTPHeaders: &blob.HTTPHeaders{BlobContentType: f.ctype}, AccessConditions: ifMatch(&f.wrote)})
		}
		if err != nil && !writtenSince(err) {
			return fmt.Errorf("chaos: planted term %s: restore: %w", f.Blob, err)
		}
		return nil
	})
}
