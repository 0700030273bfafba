package bloblock

import (
	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"

	"github.com/blobleader/blobleader/worker/storage"
)

// At returns a lock on the same blob whose Renew, Release and Update act
// only while the blob is still at version (storage.IfUnchanged on the ETag
// that Inspect returned as lease.View.Version). Lease operations do not
// change the ETag; every record write does — a later holding's term write
// above all — so a renew or release decided on an older read is refused
// (412, wrapping lease.ErrLost) even when it carries the lease ID of a later
// holding of the same holder, and of two term writes decided on one read
// only the first lands. The empty version conditions nothing.
func (l *Lock) At(version string) *Lock {
	c := *l
	c.ifMatch = version
	return &c
}

// conditions are the lease operations' access conditions; nil for none.
func (l *Lock) conditions() *blob.ModifiedAccessConditions {
	if l.ifMatch == "" {
		return nil
	}
	return storage.IfUnchanged(azcore.ETag(l.ifMatch)).ModifiedAccessConditions
}
