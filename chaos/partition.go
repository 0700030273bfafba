package chaos

import (
	"context"
	"fmt"
	"sync"
)

// PartitionMode says how a worker is cut off from storage.
type PartitionMode string

const (
	// Blackhole swallows everything in both directions on open and new
	// connections: requests hang until the client's own timeout, as when
	// packets are dropped. The default.
	Blackhole PartitionMode = "blackhole"
	// Refuse closes the proxy: open connections are closed and new ones are
	// refused at once, as when a link goes down with resets.
	Refuse PartitionMode = "refuse"
)

// Partition cuts one worker off from storage in both directions, so neither a
// request nor its answer gets through. Remove heals it.
type Partition struct {
	Mode PartitionMode `json:"mode"` // blackhole (default) or refuse

	Proxy *Proxy `json:"-"`

	mu      sync.Mutex
	hole    poison // blackhole mode
	refused place  // refuse mode: the proxy disabled
}

var _ Fault = (*Partition)(nil)

func (f *Partition) Kind() Kind     { return KindPartition }
func (f *Partition) Target() string { return targetOf(f.Proxy) }

func (f *Partition) Inject(ctx context.Context) error {
	if f.Proxy == nil {
		return fmt.Errorf("%w: partition needs a proxy", ErrNoTarget)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	switch f.mode() {
	case Blackhole:
		// Timeout 0 on both streams: nothing flows and nothing is closed.
		return f.hole.inject(ctx, f.Proxy, KindPartition, "timeout", Both, 1, map[string]int64{"timeout": 0})
	case Refuse:
		return f.refused.putIn("partition of "+f.Proxy.Name(), func() error { return f.Proxy.Disable(ctx) })
	}
	return fmt.Errorf("%w: partition mode %q (want blackhole or refuse)", ErrInvalid, f.Mode)
}

func (f *Partition) Remove(ctx context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.refused.takeOut(func() error { return f.Proxy.Enable(ctx) }); err != nil {
		return err
	}
	return f.hole.remove(ctx, f.Proxy)
}

func (f *Partition) mode() PartitionMode {
	if f.Mode == "" {
		return Blackhole
	}
	return f.Mode
}
