// Package bloblock implements election.Lock with an Azure Blob Storage lease
// on one blob. The blob's metadata carries the record: holder, term (the
// fencing token) and acquired.
//
// The lease ID is fixed for the life of a Lock (a random UUID), so an acquire
// whose answer was lost in transit can be retried and simply re-acquires our
// own lease instead of leaving a ghost lease that blocks everyone for L. A
// restarted process gets a new ID and must wait for the old lease to expire.
package bloblock

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/streaming"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/lease"
	"github.com/google/uuid"

	"github.com/blobleader/blobleader/worker/election"
)

// Metadata keys on the lock blob.
const (
	MetaHolder   = "holder"
	MetaTerm     = "term"
	MetaAcquired = "acquired"
)

// Lock is a lease on one blob. It is used by one elector at a time.
type Lock struct {
	c       *container.Client
	name    string
	blob    *blockblob.Client
	lease   *lease.BlobClient
	leaseID string
}

var _ election.Lock = (*Lock)(nil)

// New returns a lock on blob name in container c (see NewContainerClient).
func New(c *container.Client, name string) (*Lock, error) {
	if name == "" {
		return nil, fmt.Errorf("bloblock: blob name is empty")
	}
	id := uuid.NewString()
	bb := c.NewBlockBlobClient(name)
	lc, err := lease.NewBlobClient(bb, &lease.BlobClientOptions{LeaseID: &id})
	if err != nil {
		return nil, fmt.Errorf("bloblock: lease client: %w", err)
	}
	return &Lock{c: c, name: name, blob: bb, lease: lc, leaseID: id}, nil
}

// LeaseID is this lock's lease ID (for lease-guarded writes by the caller).
func (l *Lock) LeaseID() string { return l.leaseID }

// Describe names the lock for logs.
func (l *Lock) Describe() string {
	return "blob " + containerName(l.c) + "/" + l.name
}

func containerName(c *container.Client) string {
	u := strings.TrimSuffix(c.URL(), "/")
	return u[strings.LastIndex(u, "/")+1:]
}

// Acquire takes the lease for d, creating the container and blob if missing.
func (l *Lock) Acquire(ctx context.Context, d time.Duration) error {
	secs := int32(d / time.Second)
	_, err := l.lease.AcquireLease(WithOp(ctx, "acquire"), secs, nil)
	if bloberror.HasCode(err, bloberror.BlobNotFound, bloberror.ContainerNotFound) {
		if err := l.ensure(ctx); err != nil {
			return err
		}
		_, err = l.lease.AcquireLease(WithOp(ctx, "acquire"), secs, nil)
	}
	return classify("acquire", err, false)
}

// ensure creates the container and the empty lock blob, idempotently. With a
// role scoped to the container (not the account) creating the container is
// refused with 403; the container then exists (Terraform made it), so that
// answer counts as ready.
func (l *Lock) ensure(ctx context.Context) error {
	_, err := l.c.Create(WithOp(ctx, "create_container"), nil)
	if err != nil && !bloberror.HasCode(err, bloberror.ContainerAlreadyExists, bloberror.AuthorizationPermissionMismatch, bloberror.AuthorizationFailure) {
		return classify("create_container", err, false)
	}
	// If-None-Match: * so that we never overwrite a blob someone else made
	// (and its term) between our acquire and this create.
	anyTag := azcore.ETagAny
	_, err = l.blob.Upload(WithOp(ctx, "create_blob"), streaming.NopCloser(strings.NewReader("")), &blockblob.UploadOptions{
		AccessConditions: &blob.AccessConditions{ModifiedAccessConditions: &blob.ModifiedAccessConditions{IfNoneMatch: &anyTag}},
	})
	if err != nil && !bloberror.HasCode(err, bloberror.BlobAlreadyExists, bloberror.ConditionNotMet, bloberror.LeaseIDMissing) {
		return classify("create_blob", err, false)
	}
	return nil
}

// Renew extends our lease.
func (l *Lock) Renew(ctx context.Context) error {
	_, err := l.lease.RenewLease(WithOp(ctx, "renew"), nil)
	return classify("renew", err, false)
}

// Release gives our lease up.
func (l *Lock) Release(ctx context.Context) error {
	_, err := l.lease.ReleaseLease(WithOp(ctx, "release"), nil)
	return classify("release", err, false)
}

// Get reads the record from the blob's metadata. A blob without metadata (or
// no blob yet) is term 0 with no holder.
func (l *Lock) Get(ctx context.Context) (election.Record, error) {
	props, err := l.blob.GetProperties(WithOp(ctx, "get"), nil)
	if bloberror.HasCode(err, bloberror.BlobNotFound, bloberror.ContainerNotFound) {
		return election.Record{}, nil
	}
	if err != nil {
		return election.Record{}, classify("get", err, false)
	}
	return parseRecord(props.Metadata)
}

func parseRecord(md map[string]*string) (election.Record, error) {
	var r election.Record
	// Metadata names are case-insensitive in Azure; the SDK may hand them
	// back capitalised.
	for k, v := range md {
		if v == nil {
			continue
		}
		switch strings.ToLower(k) {
		case MetaHolder:
			r.Holder = *v
		case MetaTerm:
			t, err := strconv.ParseInt(*v, 10, 64)
			if err != nil || t < 0 {
				return r, fmt.Errorf("bloblock: metadata term %q is not a non-negative integer", *v)
			}
			r.Term = t
		case MetaAcquired:
			r.Acquired, _ = time.Parse(time.RFC3339Nano, *v)
		}
	}
	return r, nil
}

// Update writes the record, conditioned on our lease: storage refuses it
// (412) once the lease is not ours.
func (l *Lock) Update(ctx context.Context, r election.Record) error {
	term, acquired := strconv.FormatInt(r.Term, 10), r.Acquired.UTC().Format(time.RFC3339Nano)
	md := map[string]*string{MetaHolder: &r.Holder, MetaTerm: &term, MetaAcquired: &acquired}
	_, err := l.blob.SetMetadata(WithOp(ctx, "update"), md, &blob.SetMetadataOptions{
		AccessConditions: &blob.AccessConditions{LeaseAccessConditions: &blob.LeaseAccessConditions{LeaseID: &l.leaseID}},
	})
	return classify("update", err, true)
}

// Break frees the lease on blob name at once, as an operator would
// (BreakLease with a zero break period). The holder learns of it at its next
// renew. For operators and the chaos harness; the elector never breaks.
func Break(ctx context.Context, c *container.Client, name string) error {
	lc, err := lease.NewBlobClient(c.NewBlockBlobClient(name), nil)
	if err != nil {
		return err
	}
	zero := int32(0)
	_, err = lc.BreakLease(WithOp(ctx, "break"), &lease.BlobBreakOptions{BreakPeriod: &zero})
	return classify("break", err, false)
}
