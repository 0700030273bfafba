package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/blobleader/blobleader/worker/azuritetest"
	"github.com/blobleader/blobleader/worker/election/bloblock"
)

// probe is one of the deployment's container probes (infra/main.tf): every
// period a GET of path; failureThreshold failures in a row restart the
// container (liveness) or mark it not ready (readiness).
type probe struct {
	path             string
	period           time.Duration
	failureThreshold int
}

// deploymentProbe reads the liveness or readiness probe ("liveness_probe",
// "readiness_probe") of the worker container from infra/main.tf, the file a
// real deployment applies.
func deploymentProbe(t *testing.T, block string) probe {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "..", "infra", "main.tf"))
	if err != nil {
		t.Fatalf("read the deployment's probes: %v", err)
	}
	i := strings.Index(string(b), block+" {")
	if i < 0 {
		t.Fatalf("infra/main.tf has no %s block", block)
	}
	body := string(b[i:])
	body = body[:strings.Index(body, "\n    }\n")]
	num := func(key string) int {
		m := regexp.MustCompile(key + `\s*=\s*(\d+)`).FindStringSubmatch(body)
		if m == nil {
			t.Fatalf("infra/main.tf %s has no %s", block, key)
		}
		n, _ := strconv.Atoi(m[1])
		return n
	}
	path := regexp.MustCompile(`path\s*=\s*"([^"]+)"`).FindStringSubmatch(body)
	if path == nil {
		t.Fatalf("infra/main.tf %s has no http_get path", block)
	}
	return probe{path: path[1], period: time.Duration(num("period_seconds")) * time.Second, failureThreshold: num("failure_threshold")}
}

// Liveness means "a restart cures it" (docs/architecture.md#worker-contracts):
// a shard lock whose term no contender can stamp a next term on is not
// cured by restarting the worker, so it must never make the deployment's
// liveness probe restart it. It is readiness (/readyz 503 naming the shard,
// blobleader_ready 0), a metric (blobleader_lock_record_unusable 1) and
// /status. The worker's /healthz is sampled every second for as long as the
// deployment's liveness probe takes to restart a container (failure
// threshold × period): every sample must be 200. recover-term then repairs
// the shard's lock and the shard is owned again.
func TestWorker_UnusableShardLockIsReadinessNotLiveness(t *testing.T) {
	t.Parallel()
	live, ready := deploymentProbe(t, "liveness_probe"), deploymentProbe(t, "readiness_probe")
	if live.path != "/healthz" || ready.path != "/readyz" {
		t.Fatalf("the deployment probes %s (liveness) and %s (readiness); this test assumes /healthz and /readyz", live.path, ready.path)
	}
	az := azuritetest.StartT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
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

	// 1. It says so: readiness, /status and the metrics.
	told := func() string {
		if code, body := probeURL(t, base+"/readyz"); code != 503 || !strings.Contains(body, "shard 1") {
			return "/readyz " + strconv.Itoa(code) + " " + body
		}
		if u, _ := getStatus(t, base)["unusable"].(string); !strings.Contains(u, "shard 1") || !strings.Contains(u, "term") {
			return "/status unusable " + u
		}
		_, m := probeURL(t, base+"/metrics")
		if !strings.Contains(m, "\nblobleader_lock_record_unusable 1") || !strings.Contains(m, "\nblobleader_ready 0") {
			return "metrics blobleader_lock_record_unusable and blobleader_ready not 1 and 0"
		}
		return ""
	}
	// Polling HTTP: no event to await across processes.
	waitFor(t, fmt.Sprintf("the worker saying shard 1's lock term %q is unusable", typo), 30*time.Second, func() (bool, string) {
		why := told()
		return why == "", why
	})
	// 2. The liveness probe never fails: sampled every second for as long
	// as the deployment's probe takes to restart a container.
	window := time.Duration(live.failureThreshold) * live.period
	for end := time.Now().Add(window); time.Now().Before(end); time.Sleep(time.Second) {
		if code, body := probeURL(t, base+live.path); code != 200 {
			t.Fatalf("%s = %d %q with one shard's lock unusable: the deployment's liveness probe (every %v, %d failures in a row) would restart a worker that a restart cannot cure", live.path, code, strings.TrimSpace(body), live.period, live.failureThreshold)
		}
	}
	if owned, _ := shardsOf(t, base); len(owned) != 1 || owned[0] != 0 {
		t.Fatalf("the worker owns %v with shard 1's lock unusable; want shard 0 worked on", owned)
	}

	// 3. The repair: the shard is owned again, and the worker ready.
	code, out := runWorkerCmd(t, []string{"AZURE_STORAGE_CONNECTION_STRING=" + az.ConnectionString()},
		"recover-term", "--container", "status-test", "--blob", shardBlob, "--floor", "5")
	if code != 0 {
		t.Fatalf("recover-term on the shard's lock: exit %d\n%s", code, out)
	}
	waitFor(t, "both shards owned, the worker ready and no lock unusable after the repair", 30*time.Second, func() (bool, string) {
		owned, _ := shardsOf(t, base)
		_, m := probeURL(t, base+"/metrics")
		rc, _ := probeURL(t, base+"/readyz")
		st := getStatus(t, base)
		return len(owned) == 2 && st["unusable"] == nil && rc == 200 && strings.Contains(m, "\nblobleader_lock_record_unusable 0"),
			fmt.Sprintf("owned %v, /readyz %d, /status unusable %v", owned, rc, st["unusable"])
	})
}
