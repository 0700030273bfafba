package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/blobleader/blobleader/worker/azuritetest"
	"github.com/blobleader/blobleader/worker/election/bloblock"
)

// A shard lock whose term no contender can stamp a next term on is reported
// like the election's own: /healthz 503, /status `unusable` naming the shard
// and the metric at 1, not only a red /healthz. recover-term repairs it on
// the shard's lock blob (docs/operations.md#recovering-the-term), and the
// shard is owned again.
func TestWorker_UnusableShardLockIsReportedAndRepaired(t *testing.T) {
	t.Parallel()
	az := azuritetest.StartT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := bloblock.NewContainerClient(bloblock.ClientConfig{ConnectionString: az.ConnectionString(), Container: "status-test"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Create(ctx, nil); err != nil {
		t.Fatal(err)
	}
	const shardBlob = "leader-shards/shards/0001"
	b := c.NewBlockBlobClient(shardBlob)
	if _, err := b.UploadBuffer(ctx, nil, nil); err != nil {
		t.Fatal(err)
	}
	holder, typo := "operator", "1795400000000x"
	if _, err := b.SetMetadata(ctx, map[string]*string{"holder": &holder, "term": &typo}, nil); err != nil {
		t.Fatal(err)
	}
	base, _ := startWorker(t, az.ConnectionString(), "w1", filepath.Join(t.TempDir(), "w1.jsonl"),
		"--shards", "2", "--retry-period", "500ms", "--tick", "200ms")

	loud := func() string {
		if code, body := probeURL(t, base+"/healthz"); code != 503 || !strings.Contains(body, "shard 1") {
			return "/healthz " + body
		}
		if u, _ := getStatus(t, base)["unusable"].(string); !strings.Contains(u, "shard 1") || !strings.Contains(u, "term") {
			return "/status unusable " + u
		}
		if _, m := probeURL(t, base+"/metrics"); !strings.Contains(m, "\nblobleader_lock_record_unusable 1") {
			return "metric blobleader_lock_record_unusable not 1"
		}
		return ""
	}
	deadline := time.Now().Add(30 * time.Second)
	for why := loud(); why != ""; why = loud() {
		if time.Now().After(deadline) {
			t.Fatalf("30 s after start with shard 1's lock term %q, the worker does not say so: %s", typo, why)
		}
		time.Sleep(200 * time.Millisecond) // polling HTTP: no event to await across processes
	}

	code, out := runWorkerCmd(t, []string{"AZURE_STORAGE_CONNECTION_STRING=" + az.ConnectionString()},
		"recover-term", "--container", "status-test", "--blob", shardBlob, "--floor", "5")
	if code != 0 {
		t.Fatalf("recover-term on the shard's lock: exit %d\n%s", code, out)
	}
	deadline = time.Now().Add(30 * time.Second)
	for {
		owned, _ := shardsOf(t, base)
		_, m := probeURL(t, base+"/metrics")
		st := getStatus(t, base)
		if len(owned) == 2 && st["unusable"] == nil && strings.Contains(m, "\nblobleader_lock_record_unusable 0") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("30 s after the repair: owned %v, /status unusable %v", owned, st["unusable"])
		}
		time.Sleep(200 * time.Millisecond)
	}
}
