package main

import (
	"context"
	"flag"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
)

// readFlags are the flags of the subcommands that only read storage
// (`blobleader ledger`, `blobleader shards`): where to read and how long to
// try.
type readFlags struct {
	storage storageOptions
	timeout time.Duration
}

func (r *readFlags) register(fs *flag.FlagSet) {
	r.storage.register(fs)
	fs.DurationVar(&r.timeout, "timeout", 30*time.Second, "give up reading after this long")
}

// open validates the flags (after parse) and returns a client and a context
// that ends at --timeout; call cancel when done.
func (r *readFlags) open() (*container.Client, context.Context, context.CancelFunc, error) {
	if err := r.storage.validate(); err != nil {
		return nil, nil, nil, err
	}
	if r.timeout <= 0 {
		return nil, nil, nil, usagef("invalid --timeout %s: must be > 0", r.timeout)
	}
	c, err := newContainerClient(r.storage, nil, r.timeout, nil)
	if err != nil {
		return nil, nil, nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), r.timeout)
	return c, ctx, cancel, nil
}

// readStorage is the whole storage side of a read-only subcommand: parse
// args into fs (which r is registered on), open storage and read the --blob
// with read, all within --timeout.
func readStorage[T any](r *readFlags, fs *cmdFlags, args []string, read func(context.Context, *container.Client, string) (T, error)) (T, error) {
	var zero T
	if err := fs.parse(args); err != nil {
		return zero, err
	}
	c, ctx, cancel, err := r.open()
	if err != nil {
		return zero, fs.explain(err)
	}
	defer cancel()
	return read(ctx, c, r.storage.blob)
}
