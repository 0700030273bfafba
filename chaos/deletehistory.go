package chaos

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
)

// KindDeleteHistory: the `--history blob` container, or one worker's
// history blobs, deleted under running workers.
const KindDeleteHistory Kind = "delete_history"

// DeleteHistory is an operator deleting what `--history blob` writes: the
// whole history container, or (with Identity) one worker's blobs,
// <identity>/…, as a clean-up script would. A sink must make again what was
// deleted and count the records that went with it (docs/architecture.md#logs).
// Remove has nothing to undo: the sinks recreate what they need.
type DeleteHistory struct {
	Container *container.Client `json:"-"`                  // the history container, reached directly
	Identity  string            `json:"identity,omitempty"` // delete only this worker's blobs; empty: the whole container

	mu      sync.Mutex
	active  bool
	deleted int // blobs deleted (with Identity)
}

var _ Fault = (*DeleteHistory)(nil)

func (f *DeleteHistory) Kind() Kind { return KindDeleteHistory }

// Target is TargetAll: a worker's sink meets it at its next flush.
func (f *DeleteHistory) Target() string { return TargetAll }

// Deleted is how many blobs Inject deleted (with Identity; 0 otherwise).
func (f *DeleteHistory) Deleted() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.deleted
}

// Inject deletes the container, or the worker's blobs. Nothing to delete
// is an error: the operator deleted nothing.
func (f *DeleteHistory) Inject(ctx context.Context) error {
	if f.Container == nil {
		return fmt.Errorf("%w: delete_history needs the history container", ErrNoTarget)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.active {
		return ErrInjected
	}
	if f.Identity == "" {
		if _, err := f.Container.Delete(ctx, nil); err != nil {
			return fmt.Errorf("chaos: delete history container: %w", err)
		}
		f.active = true
		return nil
	}
	prefix := strings.TrimSuffix(f.Identity, "/") + "/"
	pager := f.Container.NewListBlobsFlatPager(&container.ListBlobsFlatOptions{Prefix: &prefix})
	n := 0
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			return fmt.Errorf("chaos: delete history of %s: list: %w", f.Identity, err)
		}
		for _, it := range page.Segment.BlobItems {
			if _, err := f.Container.NewBlobClient(*it.Name).Delete(ctx, nil); err != nil {
				return fmt.Errorf("chaos: delete history blob %s: %w", *it.Name, err)
			}
			n++
		}
	}
	if n == 0 {
		return fmt.Errorf("%w: no history blob of %s", ErrNoTarget, f.Identity)
	}
	f.deleted, f.active = n, true
	return nil
}

// Remove forgets the deletion; the sinks recreate what they need.
func (f *DeleteHistory) Remove(context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.active = false
	return nil
}
