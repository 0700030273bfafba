package chaos

import (
	"context"
	"fmt"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
)

// DeleteDocument is an operator deleting one of a shard pool's documents
// while the pool runs: the leader's assignment or summary, or a member's
// progress report (blobs nobody leases, so nothing needs breaking first).
// Whoever reads the document next finds nothing; its owner must write it
// again above anything the pool has seen. Remove has nothing to undo.
type DeleteDocument struct {
	Container *container.Client `json:"-"`    // the pool's container, reached directly
	Blob      string            `json:"blob"` // the document, e.g. "leader-shards/assignment"

	place
}

var _ Fault = (*DeleteDocument)(nil)

func (f *DeleteDocument) SetStorage(c *container.Client, _ string) { f.Container = c }

func (f *DeleteDocument) Kind() Kind { return KindDeleteDocument }

// Target is TargetAll: every member reads the document.
func (f *DeleteDocument) Target() string { return TargetAll }

// Inject deletes the document. One that is already gone is an error (the
// operator deleted nothing).
func (f *DeleteDocument) Inject(ctx context.Context) error {
	if f.Container == nil || f.Blob == "" {
		return fmt.Errorf("%w: delete_document needs the container and the document's blob", ErrNoTarget)
	}
	return f.putIn("", func() error {
		if _, err := f.Container.NewBlobClient(f.Blob).Delete(ctx, nil); err != nil {
			return fmt.Errorf("chaos: delete document %s: %w", f.Blob, err)
		}
		return nil
	})
}

// Remove forgets the deletion; the document's owner writes it again.
func (f *DeleteDocument) Remove(context.Context) error { return f.takeOut(nil) }
