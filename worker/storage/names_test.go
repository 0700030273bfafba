package storage_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/blobleader/blobleader/worker/azuritetest"
	"github.com/blobleader/blobleader/worker/storage"
)

func TestCheckBlobName(t *testing.T) {
	for _, tc := range []struct {
		name, blob string
		rule       string // "" accepted
	}{
		{"plain", "leader", ""},
		{"segments and inner dots", "pools/eu.west/leader.v2", ""},
		{"an identity with a domain", "leader-shards/members/DOMAIN.host-1", ""},
		{"unicode", "führer-wahl", ""},
		{"the longest", strings.Repeat("a", storage.MaxBlobName), ""},
		{"254 segments", strings.Repeat("a/", 253) + "a", ""},
		{"empty", "", "not be empty"},
		{"one byte too long", strings.Repeat("a", storage.MaxBlobName+1), "at most 1024 bytes"},
		{"backslash", `DOMAIN\host`, `"\\"`},
		{"trailing dot", "host.", "ends with a dot"},
		{"dots only", "..", "ends with a dot"},
		{"segment ending in a dot", "a./b", "ends with a dot"},
		{"leading slash", "/a", "empty path segment"},
		{"trailing slash", "a/", "empty path segment"},
		{"double slash", "a//b", "empty path segment"},
		{"tab", "a\tb", "control"},
		{"DEL", "a\x7fb", "control"},
		{"255 segments", strings.Repeat("a/", 254) + "a", "at most 254 path segments"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := storage.CheckBlobName(tc.blob)
			switch {
			case tc.rule == "" && err != nil:
				t.Fatalf("CheckBlobName = %v, want accepted", err)
			case tc.rule != "" && (err == nil || !strings.Contains(err.Error(), tc.rule)):
				t.Fatalf("CheckBlobName = %v, want a rule containing %q", err, tc.rule)
			}
		})
	}
}

// What storage does with names: every name CheckBlobName accepts comes
// back from a listing exactly as written (maximal length included), and a
// backslash — which it refuses — comes back as "/": the rewrite that left
// shards unowned when a member's identity was DOMAIN\host. (Azurite keeps a
// trailing dot, which Azure drops, so that rule cannot be shown here.)
func TestCheckBlobName_StorageKeepsWhatItAccepts(t *testing.T) {
	az := azuritetest.StartT(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := container.NewClientFromConnectionString(az.ConnectionString(), "names", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Create(ctx, nil); err != nil {
		t.Fatal(err)
	}
	kept := []string{
		"pools/eu.west/leader.v2",
		"leader-shards/members/DOMAIN.host-1",
		"long/" + strings.Repeat("m", storage.MaxBlobName-len("long/")),
	}
	for _, name := range kept {
		if err := storage.CheckBlobName(name); err != nil {
			t.Fatalf("%q refused: %v", name, err)
		}
	}
	written := append(append([]string(nil), kept...), `rewritten/DOMAIN\host`)
	for _, name := range written {
		if _, err := c.NewBlockBlobClient(name).UploadBuffer(ctx, nil, nil); err != nil {
			t.Fatalf("upload %q: %v", name, err)
		}
	}
	listed := map[string]bool{}
	pager := c.NewListBlobsFlatPager(nil)
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range page.Segment.BlobItems {
			listed[*it.Name] = true
		}
	}
	for _, name := range kept {
		if !listed[name] {
			t.Errorf("%q (%d bytes) was not listed as written", name, len(name))
		}
	}
	if listed[`rewritten/DOMAIN\host`] || !listed["rewritten/DOMAIN/host"] {
		t.Errorf(`a backslash was not stored as "/": listing %v`, listed)
	}
}
