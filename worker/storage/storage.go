// Package storage holds the small idioms every blobleader package that talks
// to Blob Storage shares: naming each call for metrics, creating a container
// that may already exist, the read-check-write under an ETag (IfUnchanged,
// Changed), the fencing term every guarded blob carries in its metadata
// (MetaTerm, Term), and the blob names storage keeps as written
// (CheckBlobName). It depends on the Azure SDK only, so the
// side-effect packages (ledger, history) need not import the lock backend.
package storage

import (
	"context"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
)

type opKey struct{}

// WithOp names the storage operation made with ctx ("renew", "ledger_append",
// …): the label of blobleader_storage_requests_total{op} and the key the
// chaos proxies and the per-request observer use.
func WithOp(ctx context.Context, op string) context.Context {
	return context.WithValue(ctx, opKey{}, op)
}

// Op is the operation name WithOp put on ctx, or "other".
func Op(ctx context.Context) string {
	if op, _ := ctx.Value(opKey{}).(string); op != "" {
		return op
	}
	return "other"
}

// containerReady are the answers to Create Container that leave the container
// usable: it exists already, or our role is scoped to the container (not the
// account) and may not create it — then Terraform made it, and the call that
// follows will say if it is really missing.
var containerReady = []bloberror.Code{
	bloberror.ContainerAlreadyExists,
	bloberror.AuthorizationPermissionMismatch,
	bloberror.AuthorizationFailure,
}

// EnsureContainer creates the container if it is missing. It is idempotent
// and safe to race: every answer that leaves the container existing (or not
// ours to create) is success.
func EnsureContainer(ctx context.Context, c *container.Client) error {
	_, err := c.Create(WithOp(ctx, "create_container"), nil)
	if err != nil && !bloberror.HasCode(err, containerReady...) {
		return err
	}
	return nil
}
