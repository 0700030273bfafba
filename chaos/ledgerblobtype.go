package chaos

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/blobleader/blobleader/worker/ledger"
)

// LedgerBlobType is an operator re-uploading a fenced ledger's last segment
// as a block blob — what `az storage blob upload --overwrite` makes of a
// downloaded segment by default: the same lines, but a blob that takes no
// appends (409 InvalidBlobType) and none of the segment's metadata (term,
// holder, first seq). With Content set, the block blob holds that instead
// of the segment's lines (the wrong file uploaded: a ledger nobody can
// read past). The overwrite is conditioned on the ETag it read, so no append
// that landed in between is lost. Remove puts the segment back as an append
// blob with its metadata — but only while the block blob is still the one
// Inject wrote: a writer that has since moved past it has repaired the
// ledger.
type LedgerBlobType struct {
	Container *container.Client `json:"-"`                 // the ledger's container, reached directly
	Ledger    string            `json:"ledger"`            // the ledger's base name (package ledger's blob), e.g. "leader"
	Content   string            `json:"content,omitempty"` // written instead of the segment's lines; empty: the same lines

	place
	segment string      // the segment replaced
	before  segmentCopy // as it was
	wrote   azcore.ETag // the block blob's ETag
}

var _ Fault = (*LedgerBlobType)(nil)

func (f *LedgerBlobType) SetStorage(c *container.Client, _ string) { f.Container = c }

func (f *LedgerBlobType) Kind() Kind { return KindLedgerBlobType }

// Target is TargetAll: the ledger's next writer meets it.
func (f *LedgerBlobType) Target() string { return TargetAll }

// Segment is the segment Inject replaced ("" before).
func (f *LedgerBlobType) Segment() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.segment
}

// Inject replaces the last segment, retrying (read again, upload again)
// while appends race it, within ctx. A ledger without segments is an error.
func (f *LedgerBlobType) Inject(ctx context.Context) error {
	if f.Container == nil || f.Ledger == "" {
		return fmt.Errorf("%w: ledger_blob_type needs the container and the ledger's name", ErrNoTarget)
	}
	return f.putIn("", func() error {
		if err := whileRaced(ctx, f.replaceLast); err != nil {
			return fmt.Errorf("chaos: ledger blob type: %w", err)
		}
		return nil
	})
}

func (f *LedgerBlobType) replaceLast(ctx context.Context) error {
	name, err := f.lastSegment(ctx)
	if err != nil {
		return err
	}
	resp, body, err := download(ctx, f.Container.NewBlobClient(name))
	if err != nil {
		return err
	}
	upload := body
	if f.Content != "" {
		upload = []byte(f.Content)
	}
	up, err := f.Container.NewBlockBlobClient(name).UploadBuffer(ctx, upload, &blockblob.UploadBufferOptions{
		AccessConditions: ifMatch(resp.ETag),
	})
	if err != nil {
		return err
	}
	f.segment, f.before, f.wrote = name, segmentCopy{metadata: resp.Metadata, body: body}, *up.ETag
	return nil
}

// lastSegment names the ledger's highest-numbered segment.
func (f *LedgerBlobType) lastSegment(ctx context.Context) (string, error) {
	prefix := ledger.Prefix(f.Ledger)
	var nums []int
	pager := f.Container.NewListBlobsFlatPager(&container.ListBlobsFlatOptions{Prefix: &prefix})
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			return "", fmt.Errorf("list the ledger: %w", err)
		}
		for _, it := range page.Segment.BlobItems {
			if n, err := strconv.Atoi(strings.TrimPrefix(*it.Name, prefix)); err == nil && n > 0 {
				nums = append(nums, n)
			}
		}
	}
	if len(nums) == 0 {
		return "", fmt.Errorf("%w: the ledger %q has no segment", ErrNoTarget, f.Ledger)
	}
	sort.Ints(nums)
	return fmt.Sprintf("%s%08d", prefix, nums[len(nums)-1]), nil
}

// Remove puts the append blob back if the block blob is still Inject's.
func (f *LedgerBlobType) Remove(ctx context.Context) error {
	return f.takeOut(func() error {
		b := f.Container.NewBlobClient(f.segment)
		_, err := b.Delete(ctx, &blob.DeleteOptions{AccessConditions: ifMatch(&f.wrote)})
		switch {
		case writtenSince(err):
			return nil // repaired (or replaced) since: leave it
		case err != nil:
			return fmt.Errorf("chaos: ledger blob type: restore %s: %w", f.segment, err)
		}
		if err := restoreSegment(ctx, f.Container.NewAppendBlobClient(f.segment), f.before); err != nil {
			return fmt.Errorf("chaos: ledger blob type: restore %s: %w", f.segment, err)
		}
		return nil
	})
}
