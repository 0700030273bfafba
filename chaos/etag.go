package chaos

import (
	"context"
	"io"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"

	"github.com/blobleader/blobleader/worker/storage"
)

// The read-then-conditional-write idiom of the faults that overwrite a
// blob and put it back (CorruptDocument, PlantedTerm, LedgerBlobType,
// Rollback, RollbackDocument).

// whileRaced runs a write conditioned on the version it read until storage
// stops refusing it as changed since (storage.Changed: a writer raced it;
// write reads again each time) or ctx ends, and returns the last error or
// ctx's.
func whileRaced(ctx context.Context, write func(context.Context) error) error {
	for {
		err := write(ctx)
		if !storage.Changed(err) {
			return err
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
}

// download reads the whole of b: its response (metadata, content type,
// ETag) and its body, the body closed. An error is the download's or the
// read's, unwrapped.
func download(ctx context.Context, b *blob.Client) (blob.DownloadStreamResponse, []byte, error) {
	resp, err := b.DownloadStream(ctx, nil)
	if err != nil {
		return resp, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp, body, err
}

// ifMatch conditions a write on the blob still being at etag.
func ifMatch(etag *azcore.ETag) *blob.AccessConditions {
	return &blob.AccessConditions{ModifiedAccessConditions: &blob.ModifiedAccessConditions{IfMatch: etag}}
}

// writtenSince reports whether err refuses a write conditioned on a fault's
// own earlier write because the blob changed or is gone since: its owner
// has repaired or replaced it, and there is nothing of the fault's left to
// put back.
func writtenSince(err error) bool {
	return storage.Changed(err) || bloberror.HasCode(err, bloberror.BlobNotFound)
}
