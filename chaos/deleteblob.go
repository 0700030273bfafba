package chaos

import (
	"context"
	"fmt"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
)

// DeleteBlob is an operator deleting the lock blob, with its metadata (the
// holder and the term). Storage refuses to delete a leased blob without the
// lease ID, so the operator breaks the lease first, as the portal and the CLI
// make one do; a contender that re-takes the lease in between is broken
// again. The holder learns at its next renew (404 BlobNotFound), and whoever
// acquires next finds a new, empty blob: the fault that shows whether terms
// can go backwards. Remove has nothing to undo.
type DeleteBlob struct {
	Blob *blob.Client `json:"-"` // the lock blob, reached directly (not through a worker's proxy)

	place
}

var _ Fault = (*DeleteBlob)(nil)

func (f *DeleteBlob) SetStorage(c *container.Client, lockBlob string) {
	f.Blob = c.NewBlobClient(lockBlob)
}

func (f *DeleteBlob) Kind() Kind { return KindDeleteBlob }

// Target is TargetAll: the deletion hits whoever holds the lease.
func (f *DeleteBlob) Target() string { return TargetAll }

// BlobName is the lock blob as container/blob, for the timeline.
func (f *DeleteBlob) BlobName() string { return blobName(f.Blob) }

// Inject breaks any lease and deletes the blob; it retries the pair (every
// 50 ms, within ctx) while a contender keeps re-taking the lease in between.
// A blob that is already gone is an error (the operator deleted nothing).
func (f *DeleteBlob) Inject(ctx context.Context) error {
	if f.Blob == nil {
		return fmt.Errorf("%w: delete_blob needs the lock blob", ErrNoTarget)
	}
	return f.putIn("", func() error {
		err := breakThen(ctx, f.Blob, func(ctx context.Context) error {
			_, err := f.Blob.Delete(ctx, &blob.DeleteOptions{DeleteSnapshots: to(blob.DeleteSnapshotsOptionTypeInclude)})
			return err
		})
		if err != nil {
			return fmt.Errorf("chaos: delete blob: %w", err)
		}
		return nil
	})
}

// Remove forgets the deletion; the workers recreate the blob.
func (f *DeleteBlob) Remove(context.Context) error { return f.takeOut(nil) }
