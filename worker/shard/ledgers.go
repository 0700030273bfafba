package shard

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/blobleader/blobleader/worker/storage"
)

// LedgerShards lists, in order, the shards of the pool on the election blob
// `blob` that have a ledger (at least one segment under Layout.Ledger(n)).
// A missing container has none.
func LedgerShards(ctx context.Context, c *container.Client, blob string) ([]int, error) {
	layout := Layout{Blob: blob}
	prefix := strings.TrimSuffix(layout.Ledger(0), "0000")
	pager := c.NewListBlobsFlatPager(&container.ListBlobsFlatOptions{Prefix: &prefix})
	seen := map[int]bool{}
	for pager.More() {
		page, err := pager.NextPage(storage.WithOp(ctx, "ledger_list"))
		if bloberror.HasCode(err, bloberror.ContainerNotFound) {
			return nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("shard: list the shard ledgers: %w", err)
		}
		for _, b := range page.Segment.BlobItems {
			num, rest, ok := strings.Cut(strings.TrimPrefix(*b.Name, prefix), "-ledger/")
			n, err := strconv.Atoi(num)
			if !ok || err != nil || n < 0 || n >= MaxShards || rest == "" || layout.Ledger(n) != prefix+num {
				continue // not a shard ledger's segment
			}
			seen[n] = true
		}
	}
	out := make([]int, 0, len(seen))
	for n := range seen {
		out = append(out, n)
	}
	sort.Ints(out)
	return out, nil
}
