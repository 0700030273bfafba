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
