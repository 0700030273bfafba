package chaos

import (
	"context"
	"fmt"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
)

// CorruptDocument is a shard pool document overwritten with bytes that are
// not the document: an editor's half-saved file, a truncated upload, a
// stray tool writing to the wrong name. By default the document is cut in
// half (no longer valid JSON) and keeps its metadata (the writer's term), as
// an edit in place does; Content replaces it verbatim instead, and
// DropMetadata drops the metadata as a fresh upload does. The write is
// conditioned on the ETag it read, so it never undoes a write it did not
// see. Remove puts the document back as it was, but only while the blob
// still holds what Inject wrote: once the document's owner has repaired it,
// there is nothing to undo.
type CorruptDocument struct {
	Container    *container.Client `json:"-"`                      // the pool's container, reached directly
	Blob         string            `json:"blob"`                   // the document, e.g. "leader-shards/assignment"
	Content      string            `json:"content,omitempty"`      // written verbatim; empty: the document's first half
	DropMetadata bool              `json:"dropMetadata,omitempty"` // write without the document's metadata

	place
	before   []byte             // the document Inject replaced
	metadata map[string]*string // and its metadata
	ctype    *string
	wrote    azcore.ETag // the ETag of Inject's write
}

var _ Fault = (*CorruptDocument)(nil)

func (f *CorruptDocument) SetStorage(c *container.Client, _ string) { f.Container = c }

func (f *CorruptDocument) Kind() Kind { return KindCorruptDocument }

// Target is TargetAll: every member reads the document.
func (f *CorruptDocument) Target() string { return TargetAll }

// Inject overwrites the document, conditioned on the ETag it just read;
// it reads again and retries while a writer races it, within ctx.
func (f *CorruptDocument) Inject(ctx context.Context) error {
	if f.Container == nil || f.Blob == "" {
		return fmt.Errorf("%w: corrupt_document needs the container and the document's blob", ErrNoTarget)
	}
	return f.putIn("", func() error {
		if err := whileRaced(ctx, f.overwrite); err != nil {
			return fmt.Errorf("chaos: corrupt document %s: %w", f.Blob, err)
		}
		return nil
	})
}

func (f *CorruptDocument) overwrite(ctx context.Context) error {
	resp, body, err := download(ctx, f.Container.NewBlobClient(f.Blob))
	if err != nil {
		return err
	}
	bad := []byte(f.Content)
	if f.Content == "" {
		bad = body[:len(body)/2]
	}
	md := resp.Metadata
	if f.DropMetadata {
		md = nil
	}
	up, err := f.Container.NewBlockBlobClient(f.Blob).UploadBuffer(ctx, bad, &blockblob.UploadBufferOptions{
		Metadata: md, HTTPHeaders: &blob.HTTPHeaders{BlobContentType: resp.ContentType},
		AccessConditions: ifMatch(resp.ETag),
	})
	if err != nil {
		return err
	}
	f.before, f.metadata, f.ctype, f.wrote = body, resp.Metadata, resp.ContentType, *up.ETag
	return nil
}

// Remove puts the document back as Inject found it, if the blob still holds
// Inject's write (conditioned on its ETag); otherwise its owner has written
// it since and Remove leaves it.
func (f *CorruptDocument) Remove(ctx context.Context) error {
	return f.takeOut(func() error {
		_, err := f.Container.NewBlockBlobClient(f.Blob).UploadBuffer(ctx, f.before, &blockblob.UploadBufferOptions{
			Metadata: f.metadata, HTTPHeaders: &blob.HTTPHeaders{BlobContentType: f.ctype},
			AccessConditions: ifMatch(&f.wrote),
		})
		if err != nil && !writtenSince(err) {
			return fmt.Errorf("chaos: corrupt document %s: restore: %w", f.Blob, err)
		}
		return nil
	})
}
