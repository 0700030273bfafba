package chaos

import (
	"context"
	"errors"
	"fmt"
)

// Outage cuts every worker off from storage at once (storage down for
// everyone), by partitioning each worker's proxy. Storage itself keeps its
// state, and clients that do not go through the proxies (the checker reading
// the ledger, an operator) still reach it.
type Outage struct {
	Mode PartitionMode `json:"mode"` // blackhole (default) or refuse, as for Partition

	Proxies []*Proxy `json:"-"`

	place
	parts []*Partition
}

var _ Fault = (*Outage)(nil)

func (f *Outage) Kind() Kind     { return KindOutage }
func (f *Outage) Target() string { return TargetAll }

// Inject partitions every proxy; if one fails, the ones already cut are healed.
func (f *Outage) Inject(ctx context.Context) error {
	if len(f.Proxies) == 0 {
		return fmt.Errorf("%w: outage needs proxies", ErrNoTarget)
	}
	return f.putIn("outage", func() error {
		var parts []*Partition
		for _, p := range f.Proxies {
			part := &Partition{Mode: f.Mode, Proxy: p}
			if err := part.Inject(ctx); err != nil {
				for _, q := range parts {
					_ = q.Remove(context.WithoutCancel(ctx))
				}
				return err
			}
			parts = append(parts, part)
		}
		f.parts = parts
		return nil
	})
}

// Remove heals every proxy, trying all of them even when one fails.
func (f *Outage) Remove(ctx context.Context) error {
	return f.takeOut(func() error {
		var errs []error
		var left []*Partition
		for _, part := range f.parts {
			if err := part.Remove(ctx); err != nil {
				errs = append(errs, err)
				left = append(left, part)
			}
		}
		f.parts = left // in place while some partition is
		return errors.Join(errs...)
	})
}
