// Package bloblock implements lease.Lock with an Azure Blob Storage lease
// on one blob. The blob's metadata carries the record: holder, term (the
// fencing token) and acquired.
//
// Every lease operation carries the lease ID the elector chose for that
// leadership (a fresh GUID each time), so a request held in flight from an
// ended leadership — a late renew or release — meets a different lease ID
// at storage and is refused (409 LeaseIdMismatchWithLeaseOperation). An
// acquire whose answer was lost is retried with the same ID and simply
// re-acquires our own lease instead of leaving a ghost lease that blocks
// everyone for L.
//
// If an operator deletes the lock blob or its container, the holder's next
// renew gets 404, a definite loss; the next acquire recreates both. Get on a
// blob without a term returns the term floor (the wall-clock millisecond), so
// terms handed out on a recreated record stay above every earlier one.
package bloblock

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/streaming"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	azlease "github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/lease"
	"github.com/google/uuid"

	"github.com/blobleader/blobleader/worker/election/lease"
	"github.com/blobleader/blobleader/worker/storage"
)

// Metadata keys on the lock blob.
const (
	metaHolder   = "holder"
	metaAcquired = "acquired"
	metaMode     = "mode"    // lease.Record.Mode; written when not empty
	metaProcess  = "process" // lease.Record.Process; written when not empty
)

// Lock is a lease on one blob. It is used by one elector at a time.
type Lock struct {
	c    *container.Client
	name string
	blob *blockblob.Client
	// now is the wall clock of the term floor (tests replace it).
	now func() time.Time
	// label is metadata every record of this lock carries (label.go); nil: none.
	label *label
	// ifMatch conditions Renew and Release on the record's version (At); "": none.
	ifMatch string
}

var _ lease.Lock = (*Lock)(nil)

// New returns a lock on blob name in container c (see NewContainerClient).
func New(c *container.Client, name string) (*Lock, error) {
	switch {
	case c == nil:
		return nil, errors.New("bloblock: container client is nil")
	case name == "":
		return nil, errors.New("bloblock: blob name is empty")
	}
	return &Lock{c: c, name: name, blob: c.NewBlockBlobClient(name), now: time.Now}, nil
}

// leaseClient is the lease client for one lease ID: every lease operation
// names the lease it acts on.
func (l *Lock) leaseClient(leaseID string) (*azlease.BlobClient, error) {
	if _, err := uuid.Parse(leaseID); err != nil {
		return nil, fmt.Errorf("bloblock: lease ID %q is not a GUID: %w", leaseID, err)
	}
	return azlease.NewBlobClient(l.blob, &azlease.BlobClientOptions{LeaseID: &leaseID})
}

// Describe names the lock for logs: "blob <container>/<name>", from the
// names alone (the client's URL carries a SAS connection string's query).
func (l *Lock) Describe() string {
	return "blob " + containerName(l.c) + "/" + l.name
}

func containerName(c *container.Client) string {
	u, err := url.Parse(c.URL())
	if err != nil {
		return "?"
	}
	return path.Base(strings.TrimSuffix(u.Path, "/"))
}

// Acquire takes the lease as leaseID for d (whole seconds, as storage
// counts them), creating the container and blob if missing.
func (l *Lock) Acquire(ctx context.Context, leaseID string, d time.Duration) error {
	lc, err := l.leaseClient(leaseID)
	if err != nil {
		return err
	}
	secs := int32(d / time.Second)
	_, err = lc.AcquireLease(storage.WithOp(ctx, "acquire"), secs, nil)
	if bloberror.HasCode(err, bloberror.BlobNotFound, bloberror.ContainerNotFound) {
		if err := l.ensure(ctx); err != nil {
			return err
		}
		_, err = lc.AcquireLease(storage.WithOp(ctx, "acquire"), secs, nil)
	}
	return classify("acquire", err, plainCall)
}

// ensure creates the container and the empty lock blob, idempotently. With a
// role scoped to the container (not the account) creating the container is
// refused with 403; the container then exists (Terraform made it), so that
// answer counts as ready.
func (l *Lock) ensure(ctx context.Context) error {
	if err := storage.EnsureContainer(ctx, l.c); err != nil {
		return classify("create_container", err, plainCall)
	}
	// If-None-Match: * so that we never overwrite a blob someone else made
	// (and its term) between our acquire and this create.
	_, err := l.blob.Upload(storage.WithOp(ctx, "create_blob"), streaming.NopCloser(strings.NewReader("")), &blockblob.UploadOptions{
		AccessConditions: storage.IfUnchanged(""),
		Metadata:         l.label.metadata(),
	})
	if err != nil && !bloberror.HasCode(err, bloberror.BlobAlreadyExists, bloberror.ConditionNotMet, bloberror.LeaseIDMissing) {
		return classify("create_blob", err, plainCall)
	}
	return nil
}

// Renew extends the lease held as leaseID.
func (l *Lock) Renew(ctx context.Context, leaseID string) error {
	lc, err := l.leaseClient(leaseID)
	if err != nil {
		return err
	}
	_, err = lc.RenewLease(storage.WithOp(ctx, "renew"), &azlease.BlobRenewOptions{ModifiedAccessConditions: l.conditions()})
	return classify("renew", err, leaseCall)
}

// Release gives the lease held as leaseID up; storage refuses it (409) when
// the blob's lease has another ID, so it never frees a later leadership.
func (l *Lock) Release(ctx context.Context, leaseID string) error {
	lc, err := l.leaseClient(leaseID)
	if err != nil {
		return err
	}
	_, err = lc.ReleaseLease(storage.WithOp(ctx, "release"), &azlease.BlobReleaseOptions{ModifiedAccessConditions: l.conditions()})
	return classify("release", err, leaseCall)
}

// Get reads the record from the blob's metadata. A blob without a term (or no
// blob at all: first use, or deleted by an operator) returns the term floor.
func (l *Lock) Get(ctx context.Context) (lease.Record, error) {
	r, _, err := l.Stored(ctx)
	if err == nil && r.Term == 0 {
		r.Term = l.termFloor()
	}
	return r, err
}

// Stored reads the record as storage holds it, for an operator's tools
// (recover-term): a blob without a term, or no blob, reads as term 0 — no
// term floor stands in — and term is the term's value as written ("" for
// none). A term that cannot give the next one comes back with the record
// and an error wrapping lease.ErrUnusableRecord, as from Get.
func (l *Lock) Stored(ctx context.Context) (r lease.Record, term string, err error) {
	props, err := l.blob.GetProperties(storage.WithOp(ctx, "get"), nil)
	if bloberror.HasCode(err, bloberror.BlobNotFound, bloberror.ContainerNotFound) {
		return lease.Record{}, "", nil
	}
	if err != nil {
		return lease.Record{}, "", classify("get", err, plainCall)
	}
	r, err = l.record(props.Metadata)
	return r, storage.MetadataValue(props.Metadata, storage.MetaTerm), err
}

// termFloor is the term below which a record without a term must not hand
// out the next one: the wall-clock millisecond. A record is without a term on
// first use and after an operator deleted the blob or its container; the
// floor keeps every term handed out afterwards above every term handed out
// before, as long as fewer than one leadership a millisecond happened and
// the clock did not step back (electors also never go below the highest term
// they have seen; docs/failover.md has the argument).
func (l *Lock) termFloor() int64 { return l.now().UnixMilli() }

// TermFloor is the election's term floor (lease.Lock): every new term is above the wall-clock
// millisecond, not only on a record without a term. Storage can go back in
// time — an account failover to a geo-replica or a restore hands back the
// record as it was up to the replication lag earlier — and then the record's
// term is below terms already handed out; the clock is not.
func (l *Lock) TermFloor() int64 { return l.termFloor() }

// RecordFromMetadata reads a record from a lock blob's metadata (holder,
// term, acquired), as Get does and as a listing of lock blobs with their
// metadata returns it. Every field it can read is set; the error (wrapping
// lease.ErrUnusableRecord) says that the term cannot give the next one:
// not a non-negative integer (the term is then 0), or lease.MaxTerm or more
// (kept as the term), whose successor would pass the highest term.
func RecordFromMetadata(md map[string]*string) (lease.Record, error) {
	var r lease.Record
	term, err := storage.Term(md)
	switch {
	case err != nil:
		err = fmt.Errorf("%w: %v", lease.ErrUnusableRecord, err)
	case term >= lease.MaxTerm:
		err = fmt.Errorf("%w: metadata term %d cannot grow (the next would pass %d, the highest term)", lease.ErrUnusableRecord, term, int64(lease.MaxTerm))
	}
	r.Term = term
	// Metadata names are case-insensitive in Azure; the SDK may hand them
	// back capitalised.
	for k, v := range md {
		if v == nil {
			continue
		}
		switch strings.ToLower(k) {
		case storage.MetaTerm:
			// read above
		case metaHolder:
			r.Holder = *v
		case metaAcquired:
			r.Acquired, _ = time.Parse(time.RFC3339Nano, *v)
		case metaMode:
			r.Mode = *v
		case metaProcess:
			r.Process = *v
		default:
			parseTakeover(&r, strings.ToLower(k), *v)
		}
	}
	return r, err
}

// Update writes the record, conditioned on the lease held as leaseID:
// storage refuses it (412) once that lease does not hold the blob, and with
// 404 once the blob or its container is gone. A lock made At a version
// writes only while the blob is still at that version (412 ConditionNotMet,
// storage.Changed, otherwise).
func (l *Lock) Update(ctx context.Context, leaseID string, r lease.Record) error {
	term, acquired := strconv.FormatInt(r.Term, 10), r.Acquired.UTC().Format(time.RFC3339Nano)
	md := map[string]*string{metaHolder: &r.Holder, storage.MetaTerm: &term, metaAcquired: &acquired}
	if r.Mode != "" {
		md[metaMode] = &r.Mode
	}
	if r.Process != "" {
		md[metaProcess] = &r.Process
	}
	takeoverMetadata(md, r)
	l.label.add(md)
	_, err := l.blob.SetMetadata(storage.WithOp(ctx, "update"), md, &blob.SetMetadataOptions{
		AccessConditions: &blob.AccessConditions{
			LeaseAccessConditions:    &blob.LeaseAccessConditions{LeaseID: &leaseID},
			ModifiedAccessConditions: l.conditions(),
		},
	})
	return classify("update", err, guardedWrite)
}
