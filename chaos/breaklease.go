package chaos

import (
	"context"
	"fmt"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/lease"
)

// BreakLease is an operator breaking the lock blob's lease from outside the
// cluster, with a lease client of its own. With BreakPeriod 0 the lease is
// free at once while the holder still believes it leads until its next renew
// fails; the forced-break rule (docs/chaos.md#checker-rules), not S1, applies
// to this overlap. Remove has nothing to undo: the workers themselves recover.
type BreakLease struct {
	BreakPeriod int32 `json:"breakPeriod"` // seconds (0..60) the broken lease lingers; 0 = free at once

	// Blob is the lock blob, reached directly (not through a worker's proxy).
	Blob *blob.Client `json:"-"`

	place
}

var _ Fault = (*BreakLease)(nil)

func (f *BreakLease) SetStorage(c *container.Client, lockBlob string) {
	f.Blob = c.NewBlobClient(lockBlob)
}

func (f *BreakLease) Kind() Kind { return KindBreak }

// Target is TargetAll: the break hits whoever holds the lease, which the
// operator does not know. Blob names the lock blob.
func (f *BreakLease) Target() string { return TargetAll }

// BlobName is the lock blob as container/blob, for the timeline.
func (f *BreakLease) BlobName() string { return blobName(f.Blob) }

// Inject breaks the lease. Breaking a lease that is not held fails with the
// storage error (LeaseNotPresentWithLeaseOperation).
func (f *BreakLease) Inject(ctx context.Context) error {
	if f.Blob == nil {
		return fmt.Errorf("%w: break needs the lock blob", ErrNoTarget)
	}
	if f.BreakPeriod < 0 || f.BreakPeriod > 60 {
		return fmt.Errorf("%w: breakPeriod %d s (want 0..60)", ErrInvalid, f.BreakPeriod)
	}
	return f.putIn("", func() error {
		lc, err := lease.NewBlobClient(f.Blob, nil)
		if err != nil {
			return err
		}
		period := f.BreakPeriod
		if _, err := lc.BreakLease(ctx, &lease.BlobBreakOptions{BreakPeriod: &period}); err != nil {
			return fmt.Errorf("chaos: break lease: %w", err)
		}
		return nil
	})
}

// Remove forgets the break; storage needs no undo.
func (f *BreakLease) Remove(context.Context) error { return f.takeOut(nil) }
