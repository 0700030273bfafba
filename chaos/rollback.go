package chaos

import (
	"bytes"
	"context"
	"fmt"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/streaming"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/appendblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
)

// Rollback is storage going back in time: the lock blob's metadata and the
// ledger under it restored to an earlier copy while the workers run — what
// an account failover to a geo-replica behind by its replication lag, or a
// point-in-time restore, hands back. Snapshot takes the copy (call it
// first); Inject puts it back: the lock's metadata (breaking its lease, as
// the write needs) and every ledger segment as it was, segments written
// since deleted. Remove has nothing to undo: what was lost stays lost.
type Rollback struct {
	Container *container.Client `json:"-"` // the election's container, reached directly
	LockBlob  string            `json:"lockBlob"`

	place
	metadata map[string]*string
	segments map[string]segmentCopy // ledger segment name → its copy
}

type segmentCopy struct {
	metadata map[string]*string
	body     []byte
}

var _ Fault = (*Rollback)(nil)

func (f *Rollback) SetStorage(c *container.Client, lockBlob string) {
	f.Container, f.LockBlob = c, lockBlob
}

func (f *Rollback) Kind() Kind { return KindRollback }

// Target is TargetAll: storage forgets for everyone.
func (f *Rollback) Target() string { return TargetAll }

func (f *Rollback) ledgerPrefix() string { return f.LockBlob + "-ledger/" }

// Snapshot copies the lock's metadata and the ledger, the state Inject goes
// back to.
func (f *Rollback) Snapshot(ctx context.Context) error {
	if f.Container == nil || f.LockBlob == "" {
		return fmt.Errorf("%w: rollback needs the container and the lock blob", ErrNoTarget)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	props, err := f.Container.NewBlobClient(f.LockBlob).GetProperties(ctx, nil)
	if err != nil {
		return fmt.Errorf("chaos: rollback: snapshot the lock: %w", err)
	}
	f.metadata = props.Metadata
	f.segments = map[string]segmentCopy{}
	names, err := f.ledgerSegments(ctx)
	if err != nil {
		return err
	}
	for _, name := range names {
		resp, body, err := download(ctx, f.Container.NewBlobClient(name))
		if err != nil {
			return fmt.Errorf("chaos: rollback: snapshot %s: %w", name, err)
		}
		f.segments[name] = segmentCopy{metadata: resp.Metadata, body: body}
	}
	return nil
}

func (f *Rollback) ledgerSegments(ctx context.Context) ([]string, error) {
	prefix := f.ledgerPrefix()
	var names []string
	pager := f.Container.NewListBlobsFlatPager(&container.ListBlobsFlatOptions{Prefix: &prefix})
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("chaos: rollback: list the ledger: %w", err)
		}
		for _, it := range page.Segment.BlobItems {
			names = append(names, *it.Name)
		}
	}
	return names, nil
}

// Inject puts the snapshot back.
func (f *Rollback) Inject(ctx context.Context) error {
	return f.putIn("", func() error {
		if f.metadata == nil {
			return fmt.Errorf("%w: rollback has no snapshot (call Snapshot first)", ErrInvalid)
		}
		return f.restore(ctx)
	})
}

// restore puts the ledger and the lock's record back as Snapshot saw them.
func (f *Rollback) restore(ctx context.Context) error {
	// 1. The ledger: segments written since are gone, the others as they were.
	names, err := f.ledgerSegments(ctx)
	if err != nil {
		return err
	}
	for _, name := range names {
		if _, err := f.Container.NewBlobClient(name).Delete(ctx, nil); err != nil && !bloberror.HasCode(err, bloberror.BlobNotFound) {
			return fmt.Errorf("chaos: rollback: delete %s: %w", name, err)
		}
	}
	for name, seg := range f.segments {
		if err := restoreSegment(ctx, f.Container.NewAppendBlobClient(name), seg); err != nil {
			return fmt.Errorf("chaos: rollback: restore %s: %w", name, err)
		}
	}
	// 2. The lock's record.
	if err := breakAndSetMetadata(ctx, f.Container.NewBlobClient(f.LockBlob), f.metadata); err != nil {
		return fmt.Errorf("chaos: rollback: restore the lock: %w", err)
	}
	return nil
}

// restoreSegment recreates an append blob with its metadata and its blocks
// (one JSON line a block, as the ledger writes them).
func restoreSegment(ctx context.Context, ab *appendblob.Client, seg segmentCopy) error {
	if _, err := ab.Create(ctx, &appendblob.CreateOptions{Metadata: seg.metadata}); err != nil {
		return err
	}
	for _, line := range strings.SplitAfter(string(seg.body), "\n") {
		if line == "" {
			continue
		}
		if _, err := ab.AppendBlock(ctx, streaming.NopCloser(bytes.NewReader([]byte(line))), nil); err != nil {
			return err
		}
	}
	return nil
}

// Remove forgets the rollback; storage does not get the lost writes back.
func (f *Rollback) Remove(context.Context) error { return f.takeOut(nil) }
