package chaos

import (
	"context"
	"fmt"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
)

// DeleteContainer is an operator deleting the container that holds the lock
// blob (and, for the reference task, the ledger). Storage deletes it with
// every blob in it, leases or not. The holder learns at its next renew (404
// ContainerNotFound); whoever acquires next recreates the container and an
// empty lock blob. Remove has nothing to undo: the workers recreate what they
// need. (Azure refuses to recreate a container of the same name for a while
// after deleting it, ContainerBeingDeleted; Azurite allows it at once.)
type DeleteContainer struct {
	Container *container.Client `json:"-"` // the lock's container, reached directly

	place
}

var _ Fault = (*DeleteContainer)(nil)

func (f *DeleteContainer) SetStorage(c *container.Client, _ string) { f.Container = c }

func (f *DeleteContainer) Kind() Kind { return KindDeleteContainer }

// Target is TargetAll: the deletion hits every worker.
func (f *DeleteContainer) Target() string { return TargetAll }

// ContainerName names the container, for the timeline.
func (f *DeleteContainer) ContainerName() string {
	if f.Container == nil {
		return ""
	}
	u, err := azblob.ParseURL(f.Container.URL())
	if err != nil {
		return f.Container.URL()
	}
	return u.ContainerName
}

// Inject deletes the container. A container that does not exist is an error
// (ContainerNotFound): the operator deleted nothing.
func (f *DeleteContainer) Inject(ctx context.Context) error {
	if f.Container == nil {
		return fmt.Errorf("%w: delete_container needs the container", ErrNoTarget)
	}
	return f.putIn("", func() error {
		if _, err := f.Container.Delete(ctx, nil); err != nil {
			return fmt.Errorf("chaos: delete container: %w", err)
		}
		return nil
	})
}

// Remove forgets the deletion; the workers recreate the container.
func (f *DeleteContainer) Remove(context.Context) error { return f.takeOut(nil) }
