package storage

import (
	"errors"
	"net/http"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"
)

// A read-check-write under an ETag: read a blob (its content or metadata,
// with the ETag of that version), decide from what was read (the term it
// holds), then write conditioned by IfUnchanged on that ETag. Storage
// applies the write only to the version that was read; once anyone wrote
// in between, it refuses (Changed), and the writer reads again and decides
// anew. A write never lands on a version its writer did not see.

// IfUnchanged conditions a write on the blob still being the version read
// with etag (If-Match). The empty etag stands for a read that found no
// blob: the write then creates it only while there is still none
// (If-None-Match: *).
func IfUnchanged(etag azcore.ETag) *blob.AccessConditions {
	c := &blob.ModifiedAccessConditions{}
	if etag == "" {
		anyTag := azcore.ETagAny
		c.IfNoneMatch = &anyTag
	} else {
		c.IfMatch = &etag
	}
	return &blob.AccessConditions{ModifiedAccessConditions: c}
}

// Changed reports whether storage refused a write conditioned by
// IfUnchanged because the blob is no longer the version that was read: 412
// (the ETag no longer matches, or a blob appeared), or 409 BlobAlreadyExists
// (a create met a blob created since).
func Changed(err error) bool {
	var re *azcore.ResponseError
	if errors.As(err, &re) && re.StatusCode == http.StatusPreconditionFailed {
		return true
	}
	return bloberror.HasCode(err, bloberror.BlobAlreadyExists)
}
