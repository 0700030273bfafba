package chaos

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/lease"
	"github.com/google/uuid"
)

// KindForeignHolder: a tool outside the election holding the lock's lease.
const KindForeignHolder Kind = "foreign_holder"

// ForeignHolder is a tool outside the election taking the lock's lease and
// keeping it — `az storage blob lease break`, then `az storage blob lease
// acquire` with its own lease ID, renewed by a script: the lease is held,
// and the record still names the last leader, whom nobody confirms any more.
// The holder learns at its next renew (the forced-break rule); nobody can
// lead until Remove, which releases the tool's lease.
type ForeignHolder struct {
	Blob *blob.Client `json:"-"` // the lock blob, reached directly
	// Duration is the tool's lease duration in seconds (15–60), renewed every
	// third of it; -1 takes an infinite lease (the az CLI's default), never
	// renewed. Default 15.
	Duration int32 `json:"duration,omitempty"`

	mu      sync.Mutex
	active  bool
	leaseID string
	stop    context.CancelFunc
	done    chan struct{}
}

var _ Fault = (*ForeignHolder)(nil)

func (f *ForeignHolder) SetStorage(c *container.Client, lockBlob string) {
	f.Blob = c.NewBlobClient(lockBlob)
}

func (f *ForeignHolder) Kind() Kind { return KindForeignHolder }

// Target is TargetAll: nobody can lead while it holds the lease.
func (f *ForeignHolder) Target() string { return TargetAll }

// LeaseID is the tool's lease ID ("" before Inject).
func (f *ForeignHolder) LeaseID() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.leaseID
}

// Inject breaks any lease and takes it, again while a contender re-takes it
// in between (every 50 ms, within ctx), then renews it until Remove.
func (f *ForeignHolder) Inject(ctx context.Context) error {
	if f.Blob == nil {
		return fmt.Errorf("%w: foreign_holder needs the lock blob", ErrNoTarget)
	}
	d := f.Duration
	switch {
	case d == 0:
		d = 15
	case d != -1 && (d < 15 || d > 60):
		return fmt.Errorf("%w: foreign_holder duration %d must be -1 or 15–60 seconds", ErrInvalid, d)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.active {
		return ErrInjected
	}
	id := uuid.NewString()
	lc, err := lease.NewBlobClient(f.Blob, &lease.BlobClientOptions{LeaseID: &id})
	if err != nil {
		return err
	}
	zero := int32(0)
	for {
		_, _ = lc.BreakLease(ctx, &lease.BlobBreakOptions{BreakPeriod: &zero})
		if _, err = lc.AcquireLease(ctx, d, nil); err == nil {
			break
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("chaos: foreign holder: take the lease: %w (last: %v)", ctx.Err(), err)
		case <-time.After(50 * time.Millisecond):
		}
	}
	rctx, cancel := context.WithCancel(context.Background())
	f.leaseID, f.stop, f.done, f.active = id, cancel, make(chan struct{}), true
	go func() {
		defer close(f.done)
		if d == -1 {
			<-rctx.Done()
			return
		}
		every := time.Duration(d) * time.Second / 3
		for {
			select {
			case <-rctx.Done():
				return
			case <-time.After(every):
				_, _ = lc.RenewLease(rctx, nil)
			}
		}
	}()
	return nil
}

// Remove stops the renews and releases the tool's lease.
func (f *ForeignHolder) Remove(ctx context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.active {
		return nil
	}
	f.stop()
	<-f.done
	id := f.leaseID
	lc, err := lease.NewBlobClient(f.Blob, &lease.BlobClientOptions{LeaseID: &id})
	if err != nil {
		return err
	}
	if _, err := lc.ReleaseLease(ctx, nil); err != nil {
		return fmt.Errorf("chaos: foreign holder: release: %w", err)
	}
	f.active = false
	return nil
}
