package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/lease"

	"github.com/blobleader/blobleader/worker/azuritetest"
	"github.com/blobleader/blobleader/worker/election/bloblock"
)

func TestRecoverTerm_BadInputExitsTwo(t *testing.T) {
	t.Parallel()
	conn := "--connection-string=" + goodConn
	if code, out := runWorkerCmd(t, nil, "recover-term", "--help"); code != 0 || !strings.Contains(out, "--floor") {
		t.Fatalf("recover-term --help: exit %d\n%s", code, out)
	}
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"no floor", []string{conn}},
		{"negative floor", []string{conn, "--floor=-5"}},
		{"not a number", []string{conn, "--floor=12x"}},
		{"floor that cannot grow", []string{conn, "--floor=9223372036854775807"}},
		{"floor that leaves one change", []string{conn, "--floor=9223372036854775805"}},
		{"floor that leaves too little room", []string{conn, "--floor=9007194959773695"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out := runWorkerCmd(t, []string{"AZURE_STORAGE_CONNECTION_STRING="}, append([]string{"recover-term"}, tc.args...)...)
			if code != 2 || !strings.Contains(out, "--floor") {
				t.Fatalf("exit %d, want 2 naming --floor:\n%s", code, out)
			}
		})
	}
	// The refusal of a floor with too little room names the rule and the
	// highest floor accepted.
	if _, out := runWorkerCmd(t, []string{"AZURE_STORAGE_CONNECTION_STRING="}, "recover-term", conn, "--floor=9007199254740990"); !strings.Contains(out, "invalid --floor 9007199254740990: must be at most 9007194959773694") || !strings.Contains(out, "leaves room") {
		t.Fatalf("recover-term --floor 9007199254740990 said %q; want the value, the highest floor accepted and the rule", out)
	}
}

// The operator's recovery with the workers up: a leader holds the lease, the
// record's term is an operator's typo. recover-term takes the lease (breaking
// the holder's, which learns at its next renew), sets the term above the
// floor, releases — and refuses, leaving the record alone, a floor that would
// lower the term.
func TestRecoverTerm_SetsTheTermAboveTheFloorAndNeverLowersIt(t *testing.T) {
	t.Parallel()
	az := azuritetest.StartT(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	typo := "1795400000000x"
	b := leaderBlobOf(ctx, t, az, typo, typo)
	holder, _ := lease.NewBlobClient(b.BlobClient(), nil)
	if _, err := holder.AcquireLease(ctx, 60, nil); err != nil {
		t.Fatal(err)
	}
	conn := "--connection-string=" + az.ConnectionString()
	code, out := runWorkerCmd(t, nil, "recover-term", conn, "--floor=1795400000000")
	if code != 0 {
		t.Fatalf("recover-term: exit %d\n%s", code, out)
	}
	term := func() string {
		props, err := b.GetProperties(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range props.Metadata {
			if strings.EqualFold(k, "term") {
				return *v
			}
		}
		return ""
	}
	if got := term(); got != "1795400000001" {
		t.Fatalf("term after recover-term --floor 1795400000000 = %q, want 1795400000001\n%s", got, out)
	}
	if _, err := holder.RenewLease(ctx, nil); err == nil {
		t.Fatal("the old holder still renews: recover-term did not take the lease")
	}
	// The lease is free again: a follower takes it within a poll.
	if _, err := holder.AcquireLease(ctx, 15, nil); err != nil {
		t.Fatalf("the lease was not released: %v", err)
	}
	if _, err := holder.ReleaseLease(ctx, nil); err != nil {
		t.Fatal(err)
	}
	code, out = runWorkerCmd(t, nil, "recover-term", conn, "--floor=5")
	if code != 2 || !strings.Contains(out, "--floor") || !strings.Contains(out, "1795400000001") {
		t.Fatalf("recover-term --floor 5 over term 1795400000001: exit %d, want 2 naming --floor and the term\n%s", code, out)
	}
	if got := term(); got != "1795400000001" {
		t.Fatalf("a refused recover-term changed the term to %q", got)
	}
}

// A term at or above the highest term (2^53 − 1, lease.MaxTerm: one change
// from it would pass it) is an unusable record too: no floor "lowers" it,
// so recover-term must accept any floor and repair it. A usable term above
// the floor is still never lowered.
func TestRecoverTerm_RepairsATermThatCannotGrow(t *testing.T) {
	t.Parallel()
	az := azuritetest.StartT(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b := emptyLeaderBlob(ctx, t, az)
	for _, bad := range []string{"9223372036854775807", "9223372036854775806", "9007199254740991", "-3"} {
		holder, term := "w1", bad
		if _, err := b.SetMetadata(ctx, map[string]*string{"holder": &holder, "term": &term}, nil); err != nil {
			t.Fatal(err)
		}
		conn := "--connection-string=" + az.ConnectionString()
		code, out := runWorkerCmd(t, nil, "recover-term", conn, "--floor=1795400000000")
		if code != 0 {
			t.Fatalf("recover-term --floor 1795400000000 over the unusable term %s: exit %d\n%s", bad, code, out)
		}
		props, err := b.GetProperties(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		got := ""
		for k, v := range props.Metadata {
			if strings.EqualFold(k, "term") {
				got = *v
			}
		}
		if got != "1795400000001" {
			t.Fatalf("term after repairing %s = %q, want 1795400000001\n%s", bad, got, out)
		}
	}
}

// A floor that would lower the term is refused before anything at storage
// changes: the leader keeps its lease (it renews), nothing is broken.
func TestRecoverTerm_RefusedFloorLeavesTheLeaderItsLease(t *testing.T) {
	t.Parallel()
	az := azuritetest.StartT(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	term, holderName := "1795400000001", "w1"
	b := leaderBlobOf(ctx, t, az, holderName, term)
	holder, _ := lease.NewBlobClient(b.BlobClient(), nil)
	if _, err := holder.AcquireLease(ctx, 60, nil); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runBinary(t, nil, "recover-term", "--connection-string="+az.ConnectionString(), "--floor=5")
	if code != 2 || !strings.Contains(stderr, "--floor") || !strings.Contains(stderr, term) {
		t.Fatalf("recover-term --floor 5 over term %s: exit %d, want 2 naming --floor and the term\nstdout:\n%s\nstderr:\n%s", term, code, stdout, stderr)
	}
	if strings.Contains(stdout+stderr, "break") {
		t.Fatalf("a refused recover-term says it broke the lease:\n%s%s", stdout, stderr)
	}
	if _, err := holder.RenewLease(ctx, nil); err != nil {
		t.Fatalf("the leader lost its lease to a refused recover-term: renew: %v", err)
	}
	props, err := b.GetProperties(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range props.Metadata {
		if strings.EqualFold(k, "term") && *v != term {
			t.Fatalf("a refused recover-term changed the term to %s", *v)
		}
	}
}

// emptyLeaderBlob creates the default lock blob (container leases, blob
// leader) on az, empty and without a record, for a test to write one.
func emptyLeaderBlob(ctx context.Context, t *testing.T, az *azuritetest.Server) *blockblob.Client {
	t.Helper()
	c, err := bloblock.NewContainerClient(bloblock.ClientConfig{ConnectionString: az.ConnectionString(), Container: "leases"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Create(ctx, nil); err != nil {
		t.Fatal(err)
	}
	b := c.NewBlockBlobClient("leader")
	if _, err := b.UploadBuffer(ctx, nil, nil); err != nil {
		t.Fatal(err)
	}
	return b
}

// leaderBlobOf is emptyLeaderBlob carrying a holder's and a term's
// metadata, as a worker writes them.
func leaderBlobOf(ctx context.Context, t *testing.T, az *azuritetest.Server, holder, term string) *blockblob.Client {
	t.Helper()
	b := emptyLeaderBlob(ctx, t, az)
	if _, err := b.SetMetadata(ctx, map[string]*string{"holder": &holder, "term": &term}, nil); err != nil {
		t.Fatal(err)
	}
	return b
}
