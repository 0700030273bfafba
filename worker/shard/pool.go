package shard

import (
	"context"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/lease"

	"github.com/blobleader/blobleader/worker/election/bloblock"
	"github.com/blobleader/blobleader/worker/storage"
)

// shardLease is one shard's lock as a listing shows it.
type shardLease struct {
	Leased bool   // storage shows a lease in force
	Holder string // from the lock's record: the last holder to stamp its term
	Term   int64  // from the lock's record: that holder's term
}

// poolState is one listing of the pool: every member's lease, every shard's
// lease and holder, and which documents exist.
type poolState struct {
	Members        map[string]bool   // identity → its member lease is held
	MemberModes    map[string]string // identity → the mode its member record says (sizes.go), when it says one
	Shards         []shardLease      // by shard number (shards never acquired are zero)
	AssignmentETag azcore.ETag       // "" when there is no assignment yet
	Reports        map[string]bool   // identities with a report
}

// listPool reads the whole pool in one List Blobs call (more only past 5,000
// blobs), with metadata: the bounded-cost view of who is live.
func listPool(ctx context.Context, c *container.Client, l Layout, n int) (poolState, error) {
	st := poolState{Members: map[string]bool{}, MemberModes: map[string]string{}, Shards: make([]shardLease, n), Reports: map[string]bool{}}
	prefix := l.Pool()
	pager := c.NewListBlobsFlatPager(&container.ListBlobsFlatOptions{
		Prefix:  &prefix,
		Include: container.ListBlobsInclude{Metadata: true},
	})
	for pager.More() {
		page, err := pager.NextPage(storage.WithOp(ctx, "pool_list"))
		if bloberror.HasCode(err, bloberror.ContainerNotFound) {
			return st, nil
		}
		if err != nil {
			return st, err
		}
		for _, it := range page.Segment.BlobItems {
			if it.Name == nil || it.Properties == nil {
				continue
			}
			leased := it.Properties.LeaseState != nil && *it.Properties.LeaseState == lease.StateTypeLeased
			kind, id, s := l.kind(*it.Name)
			switch kind {
			case "member":
				st.Members[id] = leased
				if rec, _ := bloblock.RecordFromMetadata(it.Metadata); rec.Mode != "" {
					st.MemberModes[id] = rec.Mode
				}
			case "report":
				st.Reports[id] = true
			case "assignment":
				if it.Properties.ETag != nil {
					st.AssignmentETag = *it.Properties.ETag
				}
			case "shard":
				if s >= n {
					continue // a shard of a larger pool, from an earlier --shards
				}
				// A term the lock could not read counts as none (0).
				rec, _ := bloblock.RecordFromMetadata(it.Metadata)
				st.Shards[s] = shardLease{Leased: leased, Holder: rec.Holder, Term: rec.Term}
			}
		}
	}
	return st, nil
}
