package chaos

import (
	"context"
	"fmt"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/lease"
)

// What the operator faults (BreakLease, DeleteBlob, OperatorMetadata) do to
// the lock blob from outside the cluster, with a client of their own.

// breakThen is an operator's write to a leased blob: storage refuses it
// without the lease ID, so the operator breaks any lease on b (at once,
// period 0) and then runs op, as the portal and the CLI make one do. While
// op fails because a contender re-took the lease in between, the pair is
// tried again every 50 ms within ctx. op's own errors are returned as they
// are.
func breakThen(ctx context.Context, b *blob.Client, op func(context.Context) error) error {
	lc, err := lease.NewBlobClient(b, nil)
	if err != nil {
		return err
	}
	zero := int32(0)
	for {
		_, err := lc.BreakLease(ctx, &lease.BlobBreakOptions{BreakPeriod: &zero})
		if err != nil && !bloberror.HasCode(err, bloberror.LeaseNotPresentWithLeaseOperation) {
			return fmt.Errorf("break the lease: %w", err)
		}
		err = op(ctx)
		switch {
		case err == nil:
			return nil
		case !bloberror.HasCode(err, bloberror.LeaseIDMissing, bloberror.LeaseIDMismatchWithBlobOperation):
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the lease kept being re-taken: %w", ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// blobName is container/blob of c, for the timeline.
func blobName(c *blob.Client) string {
	if c == nil {
		return ""
	}
	u, err := azblob.ParseURL(c.URL())
	if err != nil {
		return c.URL()
	}
	return u.ContainerName + "/" + u.BlobName
}
