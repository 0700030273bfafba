package chaos

import (
	"context"
	"fmt"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
)

// RollbackDocument is a shard pool document going back in time: the
// assignment (or summary, or a report) put back, body and metadata, to a copy
// taken earlier — what a point-in-time restore or an operator re-uploading a
// saved copy hands back. Snapshot takes the copy (call it first); Inject
// writes it over whatever the document holds now. Readers that saw a later
// version must not be left following nothing. Remove has nothing to undo.
type RollbackDocument struct {
	Container *container.Client `json:"-"`    // the pool's container, reached directly
	Blob      string            `json:"blob"` // the document, e.g. "leader-shards/assignment"

	place
	body     []byte
	metadata map[string]*string
	ctype    *string
}

var _ Fault = (*RollbackDocument)(nil)

func (f *RollbackDocument) SetStorage(c *container.Client, _ string) { f.Container = c }

func (f *RollbackDocument) Kind() Kind { return KindDocumentRollback }

// Target is TargetAll: every member reads the document.
func (f *RollbackDocument) Target() string { return TargetAll }

// Snapshot copies the document as it is now: the state Inject goes back to.
func (f *RollbackDocument) Snapshot(ctx context.Context) error {
	if f.Container == nil || f.Blob == "" {
		return fmt.Errorf("%w: document_rollback needs the container and the document's blob", ErrNoTarget)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	resp, body, err := download(ctx, f.Container.NewBlobClient(f.Blob))
	if err != nil {
		return fmt.Errorf("chaos: document rollback: snapshot %s: %w", f.Blob, err)
	}
	f.body, f.metadata, f.ctype = body, resp.Metadata, resp.ContentType
	return nil
}

// Inject writes the snapshot back over the document.
func (f *RollbackDocument) Inject(ctx context.Context) error {
	return f.putIn("", func() error {
		if f.body == nil {
			return fmt.Errorf("%w: document_rollback has no snapshot (call Snapshot first)", ErrInvalid)
		}
		_, err := f.Container.NewBlockBlobClient(f.Blob).UploadBuffer(ctx, f.body, &blockblob.UploadBufferOptions{Metadata: f.metadata,
			HTTPHeaders: &blob.HTTPHeaders{BlobContentType: f.ctype}})
		if err != nil {
			return fmt.Errorf("chaos: document rollback: restore %s: %w", f.Blob, err)
		}
		return nil
	})
}

// Remove forgets the rollback; the document's owner writes it anew.
func (f *RollbackDocument) Remove(context.Context) error { return f.takeOut(nil) }
