//go:build azure

package azure

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/blobleader/blobleader/chaos"
	"github.com/blobleader/blobleader/chaos/sidecar"
	"github.com/blobleader/blobleader/test/checker"
	"github.com/blobleader/blobleader/test/cluster"
	"github.com/blobleader/blobleader/test/scenarios"
	"github.com/blobleader/blobleader/worker/azuritetest"
	"github.com/blobleader/blobleader/worker/election"
)

// The Azure traffic path without Azure: the real worker binary with
// --storage-dial pointing at the real sidecar (in process, loopback only),
// whose upstream is Azurite; the Azure backend drives it exactly as on
// Azure — status relayed by the sidecar, a partition written as a plan —
// and the run, read back from the history blobs, passes the checker.
// If the worker's election traffic bypassed the sidecar, the partition
// would not depose it and the test fails.
func TestOffline_WorkerThroughTheSidecarIsPartitionedAndHealed(t *testing.T) {
	if testing.Short() {
		t.Skip("about 20 s: a real worker with a 5 s renew deadline")
	}
	az := sharedAzurite(t)
	root := repoRoot(t)
	dir := t.TempDir()
	bin := filepath.Join(dir, "blobleader")
	build := exec.Command("go", "build", "-o", bin, "./worker/cmd/blobleader")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build worker: %v\n%s", err, out)
	}
	control := newContainer(t, "chaos")
	leases := newContainer(t, "leases") // the worker's election container
	hc, err := container.NewClientFromConnectionString(az.ConnectionString(), "history", nil)
	if err != nil {
		t.Fatal(err)
	}
	// Each needs the other's address at start, as in a container group.
	sidecarAddr := fmt.Sprintf("127.0.0.1:%d", azuritetest.ReservePort(t))
	workerAddr := fmt.Sprintf("127.0.0.1:%d", azuritetest.ReservePort(t))
	const name = "ci-w-01"

	// The sidecar, as ACI would start it (chaos-sidecar's Main).
	sctx, stopSidecar := context.WithCancel(context.Background())
	var sidecarOut bytes.Buffer
	var mu sync.Mutex
	sidecarDone := make(chan int, 1)
	go func() {
		sidecarDone <- sidecar.Main(sctx, []string{
			"--name", name, "--listen", sidecarAddr, "--upstream", fmt.Sprintf("%s:%d", az.Host, az.Port),
			"--connection-string", az.ConnectionString(), "--container", containerNameOf(control),
			"--poll", "200ms", "--worker-status", "http://" + workerAddr + "/status",
		}, func(string) (string, bool) { return "", false }, lockedWriter{&mu, &sidecarOut})
	}()
	t.Cleanup(func() {
		stopSidecar()
		select {
		case <-sidecarDone:
		case <-time.After(10 * time.Second):
			t.Error("the sidecar did not stop")
		}
	})

	// The worker, as ACI would start it with chaos_sidecar enabled.
	p := cluster.Params{Timing: election.Timing{LeaseDuration: 15 * time.Second, RenewDeadline: 5 * time.Second, RenewInterval: time.Second,
		RetryPeriod: 500 * time.Millisecond}, Tick: 200 * time.Millisecond, ShutdownGrace: 2 * time.Second}
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(),
		"AZURE_STORAGE_CONNECTION_STRING="+az.ConnectionString(),
		"BLOBLEADER_STORAGE_DIAL="+sidecarAddr,
		"BLOBLEADER_CONTAINER="+containerNameOf(leases),
		"BLOBLEADER_IDENTITY="+name,
		"BLOBLEADER_LISTEN="+workerAddr,
		"BLOBLEADER_HISTORY=blob",
		"BLOBLEADER_LEASE_DURATION=15s", "BLOBLEADER_RENEW_DEADLINE=5s", "BLOBLEADER_RENEW_INTERVAL=1s",
		"BLOBLEADER_RETRY_PERIOD=500ms", "BLOBLEADER_TICK=200ms", "BLOBLEADER_SHUTDOWN_GRACE=2s",
		"BLOBLEADER_LOG_FORMAT=json")
	var workerOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &workerOut, &workerOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stopWorker := func() {
		if cmd.ProcessState != nil {
			return
		}
		cmd.Process.Signal(os.Interrupt)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
	}
	t.Cleanup(stopWorker)
	defer func() {
		if t.Failed() {
			mu.Lock()
			t.Logf("sidecar output:\n%s", sidecarOut.String())
			mu.Unlock()
			t.Logf("worker output:\n%s", workerOut.String())
		}
	}()

	c, err := New(Config{
		ResourceGroup: "rg-offline", StorageAccount: "devstoreaccount1", Groups: []string{name},
		Params: p, Sidecar: true, Poll: 200 * time.Millisecond, Dir: filepath.Join(dir, "history"), Logf: t.Logf,
		Leases: leases, History: hc, Control: control,
	})
	if err != nil {
		t.Fatal(err)
	}
	w := c.WaitLeader(t, 30*time.Second)

	// Partition the worker from storage through its sidecar: it must step
	// down by its renew deadline (its status, relayed by the sidecar, says so).
	part := &chaos.Partition{}
	if err := c.Inject(ctxT(t, 20*time.Second), part, w); err != nil {
		t.Fatal(err)
	}
	cut := time.Now()
	deadline := cut.Add(p.RenewDeadline + 3*time.Second)
	for {
		st, err := w.Status(ctxT(t, 5*time.Second))
		if err == nil && st.Role != "leader" {
			t.Logf("%s stepped down %v after the partition was acknowledged", name, time.Since(cut).Round(time.Millisecond))
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s still leads %v after the partition (status %+v, err %v): its election traffic does not go through the sidecar", name, time.Since(cut), st, err)
		}
		hold(100 * time.Millisecond)
	}
	if err := c.Remove(ctxT(t, 20*time.Second), part); err != nil {
		t.Fatal(err)
	}
	c.WaitLeader(t, 30*time.Second)

	// Judge it as the Azure suite does: history from blobs, ledger from
	// storage, the fault timeline, liveness from the sidecar's byte count.
	stopWorker() // flushes the history (graceful stop)
	h, err := c.History(ctxT(t, 30*time.Second), 600*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Files) == 0 || len(h.Faults) != 1 || h.Faults[0].Kind != "partition" || h.Faults[0].Target != name || h.Faults[0].End.IsZero() {
		t.Fatalf("history files %v, faults %+v: want the worker's blob and one healed partition of %s", h.Files, h.Faults, name)
	}
	run, err := scenarios.Collect(ctxT(t, 30*time.Second), c, h)
	if err != nil {
		t.Fatal(err)
	}
	if len(run.Ledger) == 0 {
		t.Fatal("the ledger is empty: the leader's fenced appends did not reach storage through the sidecar")
	}
	var started, stopped int
	for _, e := range run.Events {
		switch e.Event {
		case checker.EventStartedLeading:
			started++
		case checker.EventStoppedLeading:
			stopped++
		}
	}
	if started < 2 || stopped < 1 {
		t.Fatalf("history has %d started_leading and %d stopped_leading events, want the term before and after the partition", started, stopped)
	}
	cp := scenarios.CheckerParams(p)
	cp.ClockSkew = 250 * time.Millisecond
	res, err := checker.Check(run, cp)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range res.Violations {
		if v.Invariant != checker.InvL2 { // the worker was stopped on purpose before the sample
			t.Errorf("violation: %v", v)
		}
	}
	if !strings.Contains(workerOut.String(), "stopped cleanly") {
		t.Errorf("the worker did not stop cleanly")
	}
}

// hold lets d pass between polls of a deadline-bounded wait.
func hold(d time.Duration) {
	timer := time.NewTimer(d)
	defer timer.Stop()
	<-timer.C
}

type lockedWriter struct {
	mu *sync.Mutex
	w  *bytes.Buffer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func containerNameOf(c *container.Client) string {
	u := strings.TrimSuffix(c.URL(), "/")
	return u[strings.LastIndexByte(u, '/')+1:]
}
