package main

import (
	"context"
	"fmt"
	"io"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/streaming"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"

	"github.com/blobleader/blobleader/worker/azuritetest"
	"github.com/blobleader/blobleader/worker/election/bloblock"
	"github.com/blobleader/blobleader/worker/ledger"
	"github.com/blobleader/blobleader/worker/shard"
)

// writeLedger writes n entries under term to the ledger of base name blob.
func writeLedger(t *testing.T, ctx context.Context, conn, container, blob string, term int64, n int) {
	t.Helper()
	c, err := bloblock.NewContainerClient(bloblock.ClientConfig{ConnectionString: conn, Container: container, RequestTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	w, err := ledger.Open(ctx, c, blob, term, "w1", ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for range n {
		if _, err := w.Append(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// A check that found nothing has not passed: `ledger --verify` on a
// misspelt --blob or a missing container fails saying what it looked for,
// and on a --shards pool's blob it verifies every shard's ledger.
func TestLedgerCmd_VerifyFailsOnNothingAndVerifiesAPoolsShardLedgers(t *testing.T) {
	t.Parallel()
	az := azuritetest.StartT(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn := "--connection-string=" + az.ConnectionString()
	writeLedger(t, ctx, az.ConnectionString(), "leases", "leader", 1795400000000, 3)
	pool := shard.Layout{Blob: "pool"}
	writeLedger(t, ctx, az.ConnectionString(), "leases", pool.Ledger(0), 1795400000001, 2)
	writeLedger(t, ctx, az.ConnectionString(), "leases", pool.Ledger(3), 1795400000002, 4)

	t.Run("the election's ledger", func(t *testing.T) {
		code, stdout, stderr := runBinary(t, nil, "ledger", conn, "--verify")
		if code != 0 || !strings.Contains(stdout, "verified: 3 entries, 1 term,") {
			t.Fatalf("exit %d, want 0 and \"verified: 3 entries, 1 term,\"\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
		}
		// The TERM column holds a 13-digit term: right-aligned under its header.
		lines := strings.Split(stdout, "\n")
		end := strings.Index(lines[0], "TERM") + len("TERM")
		if i := strings.Index(lines[1], "1795400000000"); i < 0 || i+13 != end {
			t.Fatalf("the term is not right-aligned under TERM:\n%s\n%s", lines[0], lines[1])
		}
	})
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"misspelt blob", []string{"--blob", "leadr"}, []string{"leadr-ledger/", "leadr-shard-ledgers/", "--blob"}},
		{"missing container", []string{"--container", "nosuch"}, []string{`"nosuch"`, "--container"}},
	} {
		for _, verify := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s verify=%v", tc.name, verify), func(t *testing.T) {
				args := append([]string{"ledger", conn}, tc.args...)
				if verify {
					args = append(args, "--verify")
				}
				code, stdout, stderr := runBinary(t, nil, args...)
				if code != 1 || strings.Contains(stdout, "verified") {
					t.Fatalf("exit %d, want 1 and no verdict\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
				}
				for _, w := range append([]string{"no ledger"}, tc.want...) {
					if !strings.Contains(stderr, w) {
						t.Fatalf("stderr does not say %q:\n%s", w, stderr)
					}
				}
			})
		}
	}
	t.Run("a pool's shard ledgers", func(t *testing.T) {
		code, stdout, stderr := runBinary(t, nil, "ledger", conn, "--blob", "pool", "--verify")
		if code != 0 {
			t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
		}
		for _, w := range []string{"shard 0: verified 2 entries, 1 term", "shard 3: verified 4 entries, 1 term",
			"verified: 2 shard ledgers, 6 entries"} {
			if !strings.Contains(stdout, w) {
				t.Fatalf("stdout does not say %q:\n%s", w, stdout)
			}
		}
		code, stdout, _ = runBinary(t, nil, "ledger", conn, "--blob", "pool", "--json")
		if code != 0 || strings.Count(stdout, `"shard":3`) != 4 || strings.Count(stdout, `"shard":0`) != 2 {
			t.Fatalf("--json: exit %d, want 2 entries of shard 0 and 4 of shard 3:\n%s", code, stdout)
		}
	})
	t.Run("a gap in one shard's ledger", func(t *testing.T) {
		c, err := bloblock.NewContainerClient(bloblock.ClientConfig{ConnectionString: az.ConnectionString(), Container: "leases"})
		if err != nil {
			t.Fatal(err)
		}
		seg := c.NewAppendBlobClient(ledger.Prefix(pool.Ledger(3)) + "00000001")
		line := `{"seq":9,"term":1795400000002,"holder":"w1","at":"2026-11-26T00:00:00Z"}` + "\n"
		if _, err := seg.AppendBlock(ctx, streaming.NopCloser(strings.NewReader(line)), nil); err != nil {
			t.Fatal(err)
		}
		code, stdout, stderr := runBinary(t, nil, "ledger", conn, "--blob", "pool", "--verify")
		if code != 1 || !regexp.MustCompile(`shard 3.*seq 9`).MatchString(stderr) {
			t.Fatalf("exit %d, want 1 naming shard 3 and seq 9\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
		}
	})
}

// `ledger --verify` over a ledger whose first segment was re-uploaded as a
// block blob and continued past by a new term: the sequence verifies, and
// the output names the segment written outside the ledger.
func TestLedgerCmd_VerifyNamesSegmentsWrittenOutsideTheLedger(t *testing.T) {
	az := azuritetest.StartT(t)
	conn := az.ConnectionString()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := newContainerClient(storageOptions{connectionString: conn, container: "foreign"}, nil, 5*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	w1, err := ledger.Open(ctx, c, "leader", 1, "a", ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := w1.Append(ctx); err != nil {
			t.Fatal(err)
		}
	}
	seg := ledger.Prefix("leader") + "00000001"
	resp, err := c.NewBlobClient(seg).DownloadStream(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if _, err := c.NewBlockBlobClient(seg).UploadBuffer(ctx, body, &blockblob.UploadBufferOptions{}); err != nil {
		t.Fatal(err)
	}
	var sealed []int
	w2, err := ledger.Open(ctx, c, "leader", 2, "b", ledger.Options{OnForeign: func(n int, _ string) { sealed = append(sealed, n) }})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w2.Append(ctx); err != nil {
		t.Fatal(err)
	}
	if len(sealed) != 1 || sealed[0] != 1 {
		t.Fatalf("OnForeign told %v, want segment 1 once", sealed)
	}
	code, out := runWorkerCmd(t, nil, "ledger", "--verify", "--connection-string", conn, "--container", "foreign", "--timeout", "10s")
	if code != 0 || !strings.Contains(out, "verified: 3 entries, 2 terms") ||
		!strings.Contains(out, "note: segment "+seg+" is a BlockBlob, written outside the ledger") {
		t.Fatalf("ledger --verify: exit %d, want 0 with 3 entries verified and segment 1 named as written outside the ledger:\n%s", code, out)
	}
	if strings.Contains(out, "00000002 is a") {
		t.Fatalf("ledger --verify names the ledger's own segment 2 as foreign:\n%s", out)
	}
}
