package main

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/lease"
	"github.com/google/uuid"

	"github.com/blobleader/blobleader/worker/azuritetest"
	"github.com/blobleader/blobleader/worker/election/bloblock"
)

// A tool holding the lock's lease and renewing it (`az storage blob lease
// acquire` with its own lease ID, after a break) is reported by every worker
// (docs/architecture.md#conflicting-set-ups, kind foreign): a setup_conflict
// line naming the lease state, /readyz 503, blobleader_setup_conflict 1 —
// /healthz 200, a restart cures nothing — and no worker's /status names as
// leader a worker that says it follows. When the tool lets go, a leader
// follows.
func TestWorker_ForeignLeaseHolderIsReported(t *testing.T) {
	t.Parallel()
	az := azuritetest.StartT(t)
	extra := []string{"--container", "foreignholder"}
	w1, log1, _, _ := startLogging(t, az.ConnectionString(), "w1", nil, extra)
	awaitLeader(t, w1)
	w2, log2, _, _ := startLogging(t, az.ConnectionString(), "w2", nil, extra)
	c, err := bloblock.NewContainerClient(bloblock.ClientConfig{ConnectionString: az.ConnectionString(), Container: "foreignholder"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	time.Sleep(15 * time.Second) // w2 reads w1's record; w1 confirms it
	id := uuid.NewString()
	lc, err := lease.NewBlobClient(c.NewBlobClient("leader"), &lease.BlobClientOptions{LeaseID: &id})
	if err != nil {
		t.Fatal(err)
	}
	zero := int32(0)
	if _, err := lc.BreakLease(ctx, &lease.BlobBreakOptions{BreakPeriod: &zero}); err != nil {
		t.Fatal(err)
	}
	if _, err := lc.AcquireLease(ctx, 15, nil); err != nil {
		t.Fatal(err)
	}
	held := time.Now()
	renewCtx, stopRenew := context.WithCancel(ctx)
	renewDone := make(chan struct{})
	go func() {
		defer close(renewDone)
		for {
			select {
			case <-renewCtx.Done():
				return
			case <-time.After(5 * time.Second):
				_, _ = lc.RenewLease(renewCtx, nil)
			}
		}
	}()
	defer func() { stopRenew(); <-renewDone }()

	// Reported by both, within the confirmation gap (L/2 + a renew interval +
	// two request timeouts), a read, the poll, and the conflict window.
	for _, w := range []struct{ base, log string }{{w1, log1}, {w2, log2}} {
		line := awaitLogLine(t, w.log, "setup_conflict", 90*time.Second, func(l map[string]any) bool { return l["kind"] == "foreign" })
		if line["lease_state"] != "leased" || line["holder"] != "w1" || !strings.Contains(line["reason"].(string), "outside the election") {
			t.Fatalf("setup_conflict line %v: want kind foreign, lease_state leased, holder w1, a reason naming a holder outside the election", line)
		}
		rc, rbody := probeURL(t, w.base+"/readyz")
		hc, _ := probeURL(t, w.base+"/healthz")
		_, m := probeURL(t, w.base+"/metrics")
		if rc != http.StatusServiceUnavailable || !strings.Contains(rbody, "foreign") || hc != http.StatusOK || !strings.Contains(m, "\nblobleader_setup_conflict 1\n") {
			t.Fatalf("%s: /readyz %d %q, /healthz %d, setup_conflict metric in %d bytes; want 503 naming foreign, 200, and 1", w.base, rc, rbody, hc, len(m))
		}
	}
	t.Logf("both workers report the foreign holder %v after it took the lease", time.Since(held).Round(time.Millisecond))
	// Nobody is named as leader: the worker a record names says it follows.
	for range 10 {
		for _, base := range []string{w1, w2} {
			if st := getStatus(t, base); st["leader"] != "" || st["role"] == "leader" {
				t.Fatalf("%s's /status %v while a tool holds the lease: it names a leader nobody confirms", base, st)
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	// The tool lets go: a leader follows.
	stopRenew()
	<-renewDone
	if _, err := lc.ReleaseLease(ctx, nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a leader after the tool released the lease", 20*time.Second, func() (bool, string) {
		r1, r2 := getStatus(t, w1)["role"], getStatus(t, w2)["role"]
		return r1 == "leader" || r2 == "leader", fmt.Sprintf("roles %v / %v", r1, r2)
	})
}
