package scenarios

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/blobleader/blobleader/chaos"
	"github.com/blobleader/blobleader/test/checker"
	"github.com/blobleader/blobleader/test/cluster"
	"github.com/blobleader/blobleader/test/daprsdk"
	"github.com/blobleader/blobleader/worker/azuritetest"
	"github.com/blobleader/blobleader/worker/election/bloblock"
	"github.com/blobleader/blobleader/worker/mutex"
	"github.com/blobleader/blobleader/worker/stalltest"
)

// The lock scenarios: many client processes contend for K resources through
// several replicas of `blobleader locks`; each holder writes its resource's
// fenced ledger under the term it got, and the checker judges per resource
// from the clients' own lines and the ledgers (checker.CheckLocks).

// LockParams of a lock scenario.
type LockScenario struct {
	Service   string // the blobleader binary (real, or the negative control)
	Replicas  int
	Clients   int
	Resources int
	Duration  time.Duration // how long clients contend
	Expiry    int           // expiryInSeconds
	Wait      int           // waitSeconds
	// SDKClients are Dapr SDK clients (test/daprsdk/js/contend.js, the
	// official JS SDK) contending beside the curl-style ones, one per
	// protocol listed (daprsdk.HTTP, daprsdk.GRPC), on replica i mod Replicas.
	SDKClients []daprsdk.Protocol
}

// lockRig is one running lock scenario.
type lockRig struct {
	t        *testing.T
	s        LockScenario
	az       *azuritetest.Server
	dir      string
	urls     []string
	grpc     []string // each replica's --grpc-listen
	replicas []*exec.Cmd
	proxies  []*chaos.Proxy // replica i reaches storage through proxies[i]
	clients  []*exec.Cmd
	outs     []string
	locks    *container.Client
	ledgers  *container.Client

	sched   *stalltest.Probe      // the machine's promptness, for LL1
	storage *cluster.StorageProbe // Azurite's, straight (no replica proxy), for LL1

	mu     sync.Mutex
	faults []checker.LockFault
	own    []string // resources of the rig's own fault clients, beside res-0 …

	// stallBeforeKill, when set, runs in killReplica between the waiter's
	// connection and the kill: a test's stand-in for the rig's own process
	// stalled there (a busy machine), given the blocker's name.
	stallBeforeKill func(blocker string)
}

const (
	lockStore     = "lockstore"
	lockContainer = "locks"
	ledgerBox     = "ledgers"
)

func startLockRig(t *testing.T, s LockScenario) *lockRig {
	t.Helper()
	r := &lockRig{t: t, s: s, az: azuritetest.StartT(t), dir: t.TempDir(), sched: stalltest.Start(stalltest.Default)}
	t.Cleanup(r.sched.Stop)
	r.storage = cluster.StartStorageProbe(r.az.BlobEndpoint(), cluster.DefaultStorageProbe)
	t.Cleanup(r.storage.Stop)
	var err error
	for _, c := range []struct {
		p    **container.Client
		name string
	}{{&r.locks, lockContainer}, {&r.ledgers, ledgerBox}} {
		if *c.p, err = bloblock.NewContainerClient(bloblock.ClientConfig{ConnectionString: r.az.ConnectionString(), Container: c.name, RequestTimeout: 2 * time.Second}); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < s.Replicas; i++ {
		r.startReplica(i)
	}
	for i := 0; i < s.Clients; i++ {
		r.startClient(fmt.Sprintf("c%d", i), rotate(r.urls, i), "--resources", fmt.Sprint(s.Resources), "--rounds", "100000",
			"--duration", s.Duration.String(), "--seed", fmt.Sprint(i+1), "--wait", fmt.Sprint(s.Wait))
	}
	for i, p := range s.SDKClients {
		r.startSDKClient(i, p)
	}
	t.Cleanup(r.stop)
	stopAtAttemptEnd(t, r.stop)
	ifFailed(t, r.keepOnFailure)
	return r
}

// keepOnFailure keeps, for a failed run, the clients' lines, the replicas'
// logs and the probes' records in dir (failedRunDir), so the run can be
// read again after its temp dir is gone.
func (r *lockRig) keepOnFailure(dir string, ok bool) {
	if !ok {
		return
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		r.t.Logf("keep the failed run's evidence: %v", err)
		return
	}
	files, _ := filepath.Glob(filepath.Join(r.dir, "*"))
	for _, f := range files {
		if b, err := os.ReadFile(f); err == nil {
			_ = os.WriteFile(filepath.Join(dir, filepath.Base(f)), b, 0o644)
		}
	}
	if err := cluster.WriteSchedRecord(filepath.Join(dir, "cpu-probe.jsonl"), r.sched.Record()); err != nil {
		r.t.Logf("keep the CPU probe's record: %v", err)
	}
	if f, err := os.Create(filepath.Join(dir, "azurite-probe.jsonl")); err == nil {
		err = errors.Join(r.storage.WriteJSONL(f), f.Close())
		if err != nil {
			r.t.Logf("keep the storage probe's record: %v", err)
		}
	}
	r.t.Logf("failed run: client lines and replica logs kept in %s", dir)
}

// startClient starts a lockclient named owner on the replicas at urls (the
// first tried first) with the rig's expiry and ledger, and args.
func (r *lockRig) startClient(owner string, urls []string, args ...string) {
	out := filepath.Join(r.dir, owner+".jsonl")
	cmd := exec.Command(cluster.LockClientBinary(r.t), append([]string{"--urls", strings.Join(urls, ","), "--store", lockStore,
		"--owner", owner, "--expiry", fmt.Sprint(r.s.Expiry), "--connection-string", r.az.ConnectionString(),
		"--container", ledgerBox, "--out", out}, args...)...)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		r.t.Fatal(err)
	}
	r.clients, r.outs = append(r.clients, cmd), append(r.outs, out)
}

// startSDKClient starts Dapr SDK client i over protocol p on replica i mod
// Replicas; it writes its lines beside the curl-style clients'.
func (r *lockRig) startSDKClient(i int, p daprsdk.Protocol) {
	node, script, err := daprsdk.Node("contend.js")
	if err != nil {
		r.t.Fatal(err)
	}
	out := filepath.Join(r.dir, fmt.Sprintf("sdk-%d.jsonl", i))
	k := i % len(r.urls)
	cmd := exec.Command(node, script, string(p), lockStore, fmt.Sprintf("sdk-%s-%d", p, i), fmt.Sprint(r.s.Resources),
		fmt.Sprint(int(r.s.Duration.Seconds())), fmt.Sprint(r.s.Expiry), out, fmt.Sprint(100+i))
	cmd.Env = append(os.Environ(), "DAPR_HTTP_ENDPOINT="+r.urls[k], "DAPR_GRPC_ENDPOINT="+r.grpc[k])
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		r.t.Fatal(err)
	}
	r.clients, r.outs = append(r.clients, cmd), append(r.outs, out)
}

func rotate(s []string, n int) []string {
	n %= len(s)
	return append(append([]string(nil), s[n:]...), s[:n]...)
}

func (r *lockRig) startReplica(i int) {
	var addrs [2]string
	for k := range addrs {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			r.t.Fatal(err)
		}
		addrs[k] = ln.Addr().String()
		ln.Close()
	}
	addr := addrs[0]
	px, err := chaos.NewProxy(fmt.Sprintf("lock-replica-%d", i), fmt.Sprintf("%s:%d", r.az.Host, r.az.Port))
	if err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(px.Close)
	r.proxies = append(r.proxies, px)
	storage := azuritetest.ConnectionString(fmt.Sprintf("http://%s/%s", px.Addr(), azuritetest.Account))
	cmd := exec.Command(r.s.Service, "locks", "--connection-string", storage, "--container", lockContainer,
		"--store", lockStore, "--listen", addr, "--grpc-listen", addrs[1], "--log-format", "json")
	log, err := os.Create(filepath.Join(r.dir, fmt.Sprintf("replica-%d.log", i)))
	if err != nil {
		r.t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		r.t.Fatal(err)
	}
	r.replicas = append(r.replicas, cmd)
	r.urls, r.grpc = append(r.urls, "http://"+addr), append(r.grpc, addrs[1])
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := http.Get("http://" + addr + "/healthz")
		if err == nil {
			resp.Body.Close()
			return
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("replica %d did not serve /healthz within 10s", i)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (r *lockRig) stop() {
	for _, c := range append(append([]*exec.Cmd(nil), r.clients...), r.replicas...) {
		if c.ProcessState == nil {
			_ = c.Process.Kill()
			_ = c.Wait()
		}
	}
}

func (r *lockRig) fault(f checker.LockFault) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.faults = append(r.faults, f)
}

// lines reads every client's lines so far.
func (r *lockRig) lines() []checker.LockLine {
	var all []checker.LockLine
	for _, p := range r.outs {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		// A client killed mid-write can leave a partial last line.
		if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
			b = b[:i+1]
		}
		ls, err := checker.ParseLockLines(bytes.NewReader(b))
		if err != nil {
			r.t.Fatalf("client lines: %v", err)
		}
		all = append(all, ls...)
	}
	return all
}

// openHoldings are the holdings still open in the clients' lines (a got
// with no unlocked or lost after it) with more than 3 s of belief left.
func (r *lockRig) openHoldings() []checker.LockLine {
	open := map[string]checker.LockLine{}
	for _, l := range r.lines() {
		switch l.Ev {
		case "got":
			open[l.Client] = l
		case "unlocked", "lost":
			delete(open, l.Client)
		}
	}
	var out []checker.LockLine
	for _, l := range open {
		if time.Until(l.ValidUntil) > 3*time.Second {
			out = append(out, l)
		}
	}
	return out
}

// openHolding is an open holding of client i (any client when i < 0).
func (r *lockRig) openHolding(i int) (checker.LockLine, bool) {
	if i < 0 {
		return r.openHoldingOf("")
	}
	return r.openHoldingOf(fmt.Sprintf("c%d", i))
}

// openHoldingOf is an open holding of the client named owner (any client
// when owner is "").
func (r *lockRig) openHoldingOf(owner string) (checker.LockLine, bool) {
	for _, l := range r.openHoldings() {
		if owner == "" || l.Client == owner {
			return l, true
		}
	}
	return checker.LockLine{}, false
}

// await polls until cond holds or d passes.
func await(d time.Duration, cond func() bool) bool {
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if cond() {
			return true
		}
	}
	return false
}

// finish waits for the clients (each bounded by its --duration), reads
// the ledgers and judges the run. The reads get a deadline of their own,
// from when the clients are done: however long the rig took to start or
// its faults to land, the reads get all of it.
func (r *lockRig) finish() (checker.LockRun, checker.Result) {
	for _, c := range r.clients {
		if c.ProcessState == nil {
			_ = c.Wait()
		}
	}
	sched := checkerSched(r.sched.Record())
	sched.Storage = r.storage.Slow()
	run := checker.LockRun{Lines: r.lines(), Ledgers: map[string][]checker.LedgerEntry{}, Faults: r.faults, End: time.Now(), Sched: sched}
	r.t.Logf("%s", schedLine(run.Sched))
	r.t.Logf("%s", r.storage.Summary())
	noteStall(r.t, run.Sched)
	ctx, cancel := context.WithTimeout(context.Background(), ledgerReadTimeout)
	defer cancel()
	for _, res := range r.resources() {
		name, _ := mutex.BlobName("ledgers", res)
		es, err := ReadLedger(ctx, r.ledgers, name)
		if err != nil {
			r.t.Fatalf("ledger of %s: %v", res, err)
		}
		run.Ledgers[res] = es
	}
	return run, checker.CheckLocks(run, lockCheckerParams(r.s))
}

// ledgerReadTimeout bounds finish's reads of the ledgers.
const ledgerReadTimeout = 2 * time.Minute

// resources are every resource of the run: the clients' res-0 … and the
// rig's own.
func (r *lockRig) resources() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for k := 0; k < r.s.Resources; k++ {
		out = append(out, fmt.Sprintf("res-%d", k))
	}
	return append(out, r.own...)
}

func lockCheckerParams(s LockScenario) checker.LockParams {
	return checker.LockParams{Margin: 2 * time.Second, RetryPeriod: time.Second, RequestTimeout: 2 * time.Second,
		RenewEvery: 2 * time.Second, MinHoldings: 2}
}

// summary is one line per resource: holdings, ledger entries, terms.
func lockSummary(run checker.LockRun) string {
	var b strings.Builder
	got := map[string]int{}
	for _, l := range run.Lines {
		if l.Ev == "got" {
			got[l.Resource]++
		}
	}
	for res, es := range run.Ledgers {
		fmt.Fprintf(&b, "%s: %d holdings, %d ledger entries; ", res, got[res], len(es))
	}
	return b.String()
}
