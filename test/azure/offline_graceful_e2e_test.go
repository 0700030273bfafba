//go:build azure

package azure

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
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

// aciRestartDelay stands for the time ACI takes to start an exited
// container again (an assumption; a real run's log shows it).
const aciRestartDelay = 2 * time.Second

// aciGroup is one container group as ACI runs it, on loopback: the real
// worker binary (restarted whenever it exits, like restart_policy Always)
// and the real chaos sidecar beside it, sharing "localhost".
type aciGroup struct {
	name string
	mu   sync.Mutex
	out  bytes.Buffer
	exit []int // exit codes of the worker processes that ended
	stop func()
}

func (g *aciGroup) exits() []int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]int(nil), g.exit...)
}

func startACIGroup(t *testing.T, bin string, az *azuritetest.Server, name string, leases, control *container.Client) *aciGroup {
	t.Helper()
	g := &aciGroup{name: name}
	// Fixed for the group's life, as in ACI: a restarted worker binds them again.
	addr := func() string { return fmt.Sprintf("127.0.0.1:%d", azuritetest.ReservePort(t)) }
	proxy, status, ctl := addr(), addr(), addr()

	sctx, stopSidecar := context.WithCancel(context.Background())
	sidecarDone := make(chan int, 1)
	go func() {
		sidecarDone <- sidecar.Main(sctx, []string{
			"--name", name, "--listen", proxy, "--upstream", fmt.Sprintf("%s:%d", az.Host, az.Port),
			"--connection-string", az.ConnectionString(), "--container", containerNameOf(control), "--poll", "200ms",
			"--worker-status", "http://" + status + "/status", "--worker-stop", "http://" + ctl + "/stop",
		}, func(string) (string, bool) { return "", false }, lockedWriter{&g.mu, &g.out})
	}()

	env := append(os.Environ(),
		"AZURE_STORAGE_CONNECTION_STRING="+az.ConnectionString(), "BLOBLEADER_STORAGE_DIAL="+proxy,
		"BLOBLEADER_CONTROL_LISTEN="+ctl, "BLOBLEADER_CONTAINER="+containerNameOf(leases), "BLOBLEADER_IDENTITY="+name,
		"BLOBLEADER_LISTEN="+status, "BLOBLEADER_HISTORY=blob",
		"BLOBLEADER_LEASE_DURATION=15s", "BLOBLEADER_RENEW_DEADLINE=5s", "BLOBLEADER_RENEW_INTERVAL=1s",
		"BLOBLEADER_RETRY_PERIOD=500ms", "BLOBLEADER_TICK=200ms", "BLOBLEADER_SHUTDOWN_GRACE=2s", "BLOBLEADER_LOG_FORMAT=json")
	stopping := make(chan struct{})
	var cur *exec.Cmd
	loopDone := make(chan struct{})
	started := make(chan struct{}, 1)
	go func() { // restart_policy Always
		defer close(loopDone)
		for {
			cmd := exec.Command(bin)
			cmd.Env, cmd.Stdout, cmd.Stderr = env, lockedWriter{&g.mu, &g.out}, lockedWriter{&g.mu, &g.out}
			if err := cmd.Start(); err != nil {
				t.Errorf("start worker %s: %v", name, err)
				return
			}
			g.mu.Lock()
			cur = cmd
			g.mu.Unlock()
			select {
			case started <- struct{}{}:
			default:
			}
			cmd.Wait()
			g.mu.Lock()
			g.exit = append(g.exit, cmd.ProcessState.ExitCode())
			g.mu.Unlock()
			// ACI restarts an exited container after a pause of its own
			// (seconds; what exactly only a real run shows). Without one the
			// stopped worker would take the lease it just released back
			// before any follower's next poll.
			select {
			case <-stopping:
				return
			case <-time.After(aciRestartDelay):
			}
		}
	}()
	<-started
	g.stop = func() {
		close(stopping)
		g.mu.Lock()
		c := cur
		g.mu.Unlock()
		c.Process.Signal(os.Interrupt)
		select {
		case <-loopDone:
		case <-time.After(15 * time.Second):
			c.Process.Kill()
			<-loopDone
		}
		stopSidecar()
		<-sidecarDone
	}
	t.Cleanup(func() {
		select {
		case <-stopping:
		default:
			g.stop()
		}
	})
	return g
}

// The graceful stop on Azure, end to end without Azure: the harness writes a
// stop request into the leader's plan, the real sidecar POSTs it to the real
// worker's control endpoint, the worker SIGTERMs itself — steps down,
// releases, exits 0 — and is restarted as ACI would; a follower takes over
// within the graceful bound, measured from the `released` event the Azure
// suite now requires.
func TestOffline_GracefulStopThroughTheSidecarReleases(t *testing.T) {
	if testing.Short() {
		t.Skip("about 20 s: two real workers with their sidecars")
	}
	az := sharedAzurite(t)
	dir := t.TempDir()
	bin := filepath.Join(dir, "blobleader")
	build := exec.Command("go", "build", "-o", bin, "./worker/cmd/blobleader")
	build.Dir = repoRoot(t)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build worker: %v\n%s", err, out)
	}
	control, leases := newContainer(t, "chaos"), newContainer(t, "leases")
	hc, err := container.NewClientFromConnectionString(az.ConnectionString(), "history", nil)
	if err != nil {
		t.Fatal(err)
	}
	names := []string{"ci-g-01", "ci-g-02"}
	groups := map[string]*aciGroup{}
	for _, n := range names {
		groups[n] = startACIGroup(t, bin, az, n, leases, control)
	}
	defer func() {
		if t.Failed() {
			for _, g := range groups {
				g.mu.Lock()
				t.Logf("%s output:\n%s", g.name, g.out.String())
				g.mu.Unlock()
			}
		}
	}()
	p := cluster.Params{Timing: election.Timing{LeaseDuration: 15 * time.Second, RenewDeadline: 5 * time.Second, RenewInterval: time.Second,
		RetryPeriod: 500 * time.Millisecond}, Tick: 200 * time.Millisecond, ShutdownGrace: 2 * time.Second}
	c, err := New(Config{ResourceGroup: "rg-offline", StorageAccount: "devstoreaccount1", Groups: names, Params: p, Sidecar: true,
		Poll: 200 * time.Millisecond, Dir: filepath.Join(dir, "history"), Logf: t.Logf, Leases: leases, History: hc, Control: control})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Start(ctxT(t, 30*time.Second), 2); err != nil {
		t.Fatal(err)
	}
	old := c.WaitLeader(t, 30*time.Second)
	began := time.Now()
	stop := &chaos.Stop{Restart: true}
	if err := c.Inject(ctxT(t, 30*time.Second), stop, old); err != nil {
		t.Fatal(err)
	}
	c.WaitLeader(t, 10*time.Second, old.Identity())
	if err := c.Remove(ctxT(t, 60*time.Second), stop); err != nil {
		t.Fatal(err)
	}
	if ex := groups[old.Identity()].exits(); len(ex) != 1 || ex[0] != 0 {
		t.Fatalf("the stopped worker's exit codes %v, want one clean exit (0)", ex)
	}

	for _, g := range groups { // flush every history (graceful stops)
		g.stop()
	}
	h, err := c.History(ctxT(t, 30*time.Second), 300*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	run, err := scenarios.Collect(ctxT(t, 30*time.Second), c, h)
	if err != nil {
		t.Fatal(err)
	}
	cp := scenarios.CheckerParams(p)
	cp.ClockSkew = 250 * time.Millisecond
	res, err := checker.Check(run, cp)
	if err != nil {
		t.Fatal(err)
	}
	if err := RequireReleased(run, res, began); err != nil {
		t.Fatal(err)
	}
	for _, fo := range res.Failovers {
		if fo.Kind == checker.FaultGraceful {
			t.Logf("graceful failover: %s released at %s, %s took over after %v (bound %v)", fo.Leader, fo.From.Format(time.RFC3339Nano), fo.NewLeader, fo.Duration.Round(time.Millisecond), fo.Bound)
		}
	}
	for _, v := range res.Violations {
		if v.Invariant != checker.InvL2 { // every worker was stopped on purpose before the sample
			t.Errorf("violation: %v", v)
		}
	}
}
