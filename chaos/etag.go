package chaos

import (
	"context"

	"github.com/blobleader/blobleader/worker/storage"
)

// whileRaced runs a write conditioned on the version it read until storage
// stops refusing it as changed since (storage.Changed: a writer raced it;
// write reads again each time) or ctx ends, and returns the last error or
// ctx's.
func whileRaced(ctx context.Context, write func(context.Context) error) error {
	for {
		err := write(ctx)
		if !storage.Changed(err) {
			return err
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
}
