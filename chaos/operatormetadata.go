package chaos

import (
	"context"
	"fmt"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/blobleader/blobleader/worker/storage"
)

// OperatorMetadata is an operator writing the lock blob's metadata by hand —
// the documented recovery step with a typo in it (a term like
// "1795400000000x"), a term at the top of the int64 range
// ("9223372036854775807", which no leadership can grow, or int64 max − 1,
// which one change exhausts), or a record without
// its holder. Storage refuses a metadata write on a leased blob without the
// lease ID, so the operator breaks the lease first, as the tools make one
// do; a contender that re-takes the lease in between is broken again. The
// holder learns at its next renew (the forced-break rule). Remove puts back
// the metadata the blob had before Inject, as an operator repairing the typo
// would.
type OperatorMetadata struct {
	// Term is written verbatim as the "term" value; empty leaves the term as it is.
	Term string `json:"term,omitempty"`
	// DropHolder removes the "holder" value.
	DropHolder bool `json:"dropHolder,omitempty"`

	Blob *blob.Client `json:"-"` // the lock blob, reached directly (not through a worker's proxy)

	place
	before map[string]*string // the metadata Inject replaced
	wrote  map[string]*string // the metadata Inject wrote
}

var _ Fault = (*OperatorMetadata)(nil)

func (f *OperatorMetadata) SetStorage(c *container.Client, lockBlob string) {
	f.Blob = c.NewBlobClient(lockBlob)
}

func (f *OperatorMetadata) Kind() Kind { return KindOperatorMetadata }

// Target is TargetAll: the write hits whoever holds or next takes the lease.
func (f *OperatorMetadata) Target() string { return TargetAll }

// BlobName is the lock blob as container/blob, for the timeline.
func (f *OperatorMetadata) BlobName() string { return blobName(f.Blob) }

// Inject breaks any lease and writes the metadata, retrying the pair (every
// 50 ms, within ctx) while a contender keeps re-taking the lease in between.
func (f *OperatorMetadata) Inject(ctx context.Context) error {
	if f.Blob == nil {
		return fmt.Errorf("%w: operator_metadata needs the lock blob", ErrNoTarget)
	}
	if f.Term == "" && !f.DropHolder {
		return fmt.Errorf("%w: operator_metadata writes nothing (set term or dropHolder)", ErrInvalid)
	}
	return f.putIn("", func() error { return f.write(ctx) })
}

// write replaces the record's metadata as asked, remembering what it was.
func (f *OperatorMetadata) write(ctx context.Context) error {
	props, err := f.Blob.GetProperties(ctx, nil)
	if err != nil {
		return fmt.Errorf("chaos: operator metadata: read the record: %w", err)
	}
	f.before = props.Metadata
	md := map[string]*string{}
	for k, v := range props.Metadata {
		switch key := strings.ToLower(k); {
		case key == "holder" && f.DropHolder:
		case key == storage.MetaTerm && f.Term != "":
		default:
			md[key] = v
		}
	}
	if f.Term != "" {
		md[storage.MetaTerm] = to(f.Term)
	}
	if err := breakAndSetMetadata(ctx, f.Blob, md); err != nil {
		return fmt.Errorf("chaos: operator metadata: %w", err)
	}
	f.wrote = md
	return nil
}

// Remove puts the metadata back as it was before Inject (breaking the lease
// of whoever holds it, as the write needs) — but only while the record is
// still the one Inject wrote: once a contender has stamped a term over it,
// putting the older term back would itself roll the terms back.
func (f *OperatorMetadata) Remove(ctx context.Context) error {
	return f.takeOut(func() error {
		props, err := f.Blob.GetProperties(ctx, nil)
		if err != nil {
			return fmt.Errorf("chaos: operator metadata: read the record: %w", err)
		}
		if storage.MetadataValue(props.Metadata, storage.MetaTerm) != storage.MetadataValue(f.wrote, storage.MetaTerm) ||
			storage.MetadataValue(props.Metadata, "holder") != storage.MetadataValue(f.wrote, "holder") {
			return nil // a contender stamped a new record: nothing to repair
		}
		if err := breakAndSetMetadata(ctx, f.Blob, f.before); err != nil {
			return fmt.Errorf("chaos: operator metadata: restore: %w", err)
		}
		return nil
	})
}

// breakAndSetMetadata breaks any lease on b and sets its metadata to md
// (see breakThen).
func breakAndSetMetadata(ctx context.Context, b *blob.Client, md map[string]*string) error {
	return breakThen(ctx, b, func(ctx context.Context) error {
		if _, err := b.SetMetadata(ctx, md, nil); err != nil {
			return fmt.Errorf("set metadata: %w", err)
		}
		return nil
	})
}
