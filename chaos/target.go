package chaos

import "github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

// StorageTarget is implemented by the faults that act on storage directly,
// as an operator or a restore would, not through a worker's proxy: the
// lock blob (BreakLease, DeleteBlob, OperatorMetadata), its container
// (DeleteContainer, Rollback) and the documents and ledgers beside it
// (DeleteDocument, RollbackDocument, CorruptDocument, LedgerBlobType). Every
// cluster backend hands them its storage in one place.
type StorageTarget interface {
	// SetStorage sets the container the fault acts in and the name of the
	// lock blob in it.
	SetStorage(c *container.Client, lockBlob string)
}

// RequestTarget is implemented by the request-level faults, which act on
// one worker's requests in its HTTP-aware proxy (LateDelivery, LateBreak,
// LostResponse, Refusal, SlowReads).
type RequestTarget interface {
	// SetHTTPProxy sets the proxy of the worker the fault acts on.
	SetHTTPProxy(p *HTTPProxy)
}

var (
	_ StorageTarget = (*BreakLease)(nil)
	_ StorageTarget = (*DeleteBlob)(nil)
	_ StorageTarget = (*OperatorMetadata)(nil)
	_ StorageTarget = (*DeleteContainer)(nil)
	_ StorageTarget = (*Rollback)(nil)
	_ StorageTarget = (*DeleteDocument)(nil)
	_ StorageTarget = (*RollbackDocument)(nil)
	_ StorageTarget = (*CorruptDocument)(nil)
	_ StorageTarget = (*LedgerBlobType)(nil)

	_ RequestTarget = (*LateDelivery)(nil)
	_ RequestTarget = (*LateBreak)(nil)
	_ RequestTarget = (*LostResponse)(nil)
	_ RequestTarget = (*Refusal)(nil)
	_ RequestTarget = (*SlowReads)(nil)
)
