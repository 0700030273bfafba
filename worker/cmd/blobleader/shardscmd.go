package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/blobleader/blobleader/worker/shard"
)

// errNoSummary: no leader of the pool has published a summary yet.
var errNoSummary = errors.New("no shard summary yet: no leader of a --shards pool has published one")

// runShards prints the leader's summary of the shard pool on --blob: per
// shard its owner, the owner's shard term and its progress (the last
// sequence of the shard's fenced ledger the owner reported).
func runShards(args []string, stdout, _ io.Writer) error {
	o, err := parseShardsOptions(args, stdout)
	if err != nil {
		return err
	}
	var sum *shard.Summary
	err = o.onStorage(func(ctx context.Context, c *container.Client) (err error) {
		sum, err = shard.ReadSummary(ctx, c, o.storage.blob)
		return err
	})
	if err != nil {
		return err
	}
	if sum == nil {
		return fmt.Errorf("%w (blob %s in container %s)", errNoSummary, shard.Layout{Blob: o.storage.blob}.Summary(), o.storage.container)
	}
	if o.asJSON {
		return json.NewEncoder(stdout).Encode(sum)
	}
	fmt.Fprintf(stdout, "leader %s  term %d  assignment version %d  at %s\nmembers: %s\n",
		sum.Leader, sum.Term, sum.Version, sum.At.Format(time.RFC3339), strings.Join(sum.Members, " "))
	fmt.Fprintf(stdout, "%5s  %-30s %15s %10s  %s\n", "SHARD", "OWNER", "TERM", "PROGRESS", "STANDBY")
	for _, sh := range sum.Shards {
		owner := sh.Owner
		if owner == "" {
			owner = "-"
		}
		fmt.Fprintf(stdout, "%5d  %-30s %15d %10d  %s\n", sh.Shard, owner, sh.Term, sh.Progress, sh.Standby)
	}
	return nil
}
