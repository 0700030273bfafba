package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/blobleader/blobleader/worker/azuritetest"
	"github.com/blobleader/blobleader/worker/election/bloblock"
	"github.com/blobleader/blobleader/worker/ledger"
	"github.com/blobleader/blobleader/worker/storage"
)

// A ledger holding a term above the lock's, one no leader of the lock ever
// held (written by hand, restored from another deployment), is the one
// planted term the worker cannot repair by itself: appending under its own,
// lower, term would make the ledger's terms go back. So it is loud with the
// repair: one ERROR line per leadership (event ledger_term_above_lock) that
// prints the recover-term command with the floor to give; and the command
// as printed does repair it (docs/operations.md#recovering-the-term).
func TestWorker_LedgerTermAboveTheLockIsLoudWithTheRepair(t *testing.T) {
	t.Parallel()
	az := azuritetest.StartT(t)
	base, logPath, _, _ := startLogging(t, az.ConnectionString(), "w1", nil, []string{"--tick", "200ms"})
	awaitLeader(t, base)
	c, err := bloblock.NewContainerClient(bloblock.ClientConfig{ConnectionString: az.ConnectionString(), Container: "cw1"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	seg := awaitLedgerSegment(ctx, t, c)
	term := int64(getStatus(t, base)["term"].(float64))
	planted := term + 1_000_000_000
	props, err := c.NewBlobClient(seg).GetProperties(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	md := map[string]*string{}
	for k, v := range props.Metadata {
		if !strings.EqualFold(k, storage.MetaTerm) {
			md[k] = v
		}
	}
	p := strconv.FormatInt(planted, 10)
	md[storage.MetaTerm] = &p
	if _, err := c.NewBlobClient(seg).SetMetadata(ctx, md, nil); err != nil {
		t.Fatal(err)
	}
	line := awaitLogLine(t, logPath, "ledger_term_above_lock", 20*time.Second, func(l map[string]any) bool {
		return l["term_found"] == float64(planted)
	})
	repair, _ := line["repair"].(string)
	want := fmt.Sprintf("blobleader recover-term --container cw1 --blob leader --floor %d", planted)
	if repair != want || line["level"] != "ERROR" {
		t.Fatalf("ledger_term_above_lock line %v: want level ERROR and repair %q", line, want)
	}
	// The repair as printed.
	args := strings.Fields(strings.TrimPrefix(repair, "blobleader "))
	if code, out := runWorkerCmd(t, []string{"AZURE_STORAGE_CONNECTION_STRING=" + az.ConnectionString()}, args...); code != 0 {
		t.Fatalf("the printed repair %q: exit %d\n%s", repair, code, out)
	}
	waitFor(t, fmt.Sprintf("a ledger entry above term %d after the printed repair", planted), 60*time.Second, func() (bool, string) {
		es, err := ledger.ReadAll(ctx, c, "leader")
		if err != nil || len(es) == 0 {
			return false, fmt.Sprintf("%d entries, err %v", len(es), err)
		}
		return es[len(es)-1].Term > planted, fmt.Sprintf("last entry's term %d", es[len(es)-1].Term)
	})
}

// awaitLedgerSegment waits for the reference task's first ledger segment
// and returns its name.
func awaitLedgerSegment(ctx context.Context, t *testing.T, c *container.Client) string {
	t.Helper()
	for {
		segs, err := ledger.ListSegments(ctx, c, "leader")
		if err == nil && len(segs) > 0 {
			return segs[len(segs)-1].Name
		}
		if ctx.Err() != nil {
			t.Fatalf("no ledger segment: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
