//go:build azure

package azure

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/containerinstance/armcontainerinstance/v2"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/storage/armstorage"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/blobleader/blobleader/chaos"
	"github.com/blobleader/blobleader/chaos/sidecar"
	"github.com/blobleader/blobleader/test/cluster"
)

// Config describes a deployed cluster and the clients to reach it.
type Config struct {
	ResourceGroup  string
	StorageAccount string
	Groups         []string // container group names, in worker order; each is that worker's identity
	LockBlob       string   // default "leader"
	Params         cluster.Params
	Sidecar        bool          // the chaos sidecar runs in every group (network faults, relayed status)
	StatusMaxAge   time.Duration // a relayed status older than this is not trusted (exec instead); default 3 s
	Poll           time.Duration // ARM and state polling period; default 2 s
	// ARMBudget bounds each ARM-backed fault operation (crash: stop, heal:
	// start, outage: a rule change until the probe sees it, graceful stop:
	// until the worker is back) in place of the caller's deadline, which the
	// shared scenarios size for local processes; default DefaultARMBudget.
	ARMBudget time.Duration
	Dir       string // where History downloads the histories; required
	Logf      func(format string, args ...any)

	GroupsClient *armcontainerinstance.ContainerGroupsClient // crash, restart, liveness
	Exec         Execer                                      // status when no fresh relayed one; nil: none
	Accounts     *armstorage.AccountsClient                  // outage
	Leases       *container.Client                           // the election's container, reached directly (ledger, break)
	History      *container.Client                           // the history container
	Control      *container.Client                           // the chaos control container (plans, states)
}

// Cluster is the Azure backend of cluster.Cluster. Its workers exist as long
// as the deployment does: Start only checks that they answer, and Stop heals
// faults but destroys nothing (the suite's teardown stage does).
type Cluster struct {
	cfg     Config
	start   time.Time
	workers []*worker

	timeline cluster.Timeline

	opsMu sync.Mutex
	ops   []chaos.ARMOp
}

var _ cluster.Cluster = (*Cluster)(nil)

// New checks cfg and returns the cluster.
func New(cfg Config) (*Cluster, error) {
	switch {
	case len(cfg.Groups) == 0:
		return nil, errors.New("azure: no container groups")
	case cfg.Dir == "":
		return nil, errors.New("azure: no directory for the histories")
	case cfg.Leases == nil || cfg.History == nil:
		return nil, errors.New("azure: needs the leases and history container clients")
	case cfg.Sidecar && cfg.Control == nil:
		return nil, errors.New("azure: the sidecar needs the control container client")
	}
	if cfg.LockBlob == "" {
		cfg.LockBlob = "leader"
	}
	if cfg.Params == (cluster.Params{}) {
		cfg.Params = cluster.DefaultParams()
	}
	if cfg.StatusMaxAge <= 0 {
		cfg.StatusMaxAge = 3 * time.Second
	}
	if cfg.Poll <= 0 {
		cfg.Poll = 2 * time.Second
	}
	if cfg.ARMBudget <= 0 {
		cfg.ARMBudget = DefaultARMBudget
	}
	if cfg.Logf == nil {
		cfg.Logf = func(string, ...any) {}
	}
	c := &Cluster{cfg: cfg, start: time.Now()}
	for i, g := range cfg.Groups {
		w := &worker{c: c, slot: fmt.Sprintf("w%d", i+1), name: g}
		w.running.Store(true)
		if cfg.Sidecar {
			w.ctl = &sidecar.Controller{Store: &sidecar.Store{C: cfg.Control, Name: g}, Poll: 250 * time.Millisecond}
		}
		c.workers = append(c.workers, w)
	}
	return c, nil
}

func (c *Cluster) Params() cluster.Params     { return c.cfg.Params }
func (c *Cluster) Storage() *container.Client { return c.cfg.Leases }
func (c *Cluster) LockBlob() string           { return c.cfg.LockBlob }
func (c *Cluster) ClusterStart() time.Time    { return c.start }
func (c *Cluster) group(w *worker) *chaos.ContainerGroup {
	return &chaos.ContainerGroup{Client: c.cfg.GroupsClient, ResourceGroup: c.cfg.ResourceGroup, Name: w.name, Poll: c.cfg.Poll, OnOp: c.recordOp}
}

// recordOp keeps and logs one ARM operation (the report lists them).
func (c *Cluster) recordOp(op chaos.ARMOp) {
	c.opsMu.Lock()
	c.ops = append(c.ops, op)
	c.opsMu.Unlock()
	if op.Err != "" {
		c.cfg.Logf("arm: %s %s failed after %v: %s", op.Op, op.Target, op.Took.Round(time.Millisecond), op.Err)
		return
	}
	c.cfg.Logf("arm: %s %s took %v", op.Op, op.Target, op.Took.Round(time.Millisecond))
}

// ARMOps are the ARM operations of every fault so far, in order.
func (c *Cluster) ARMOps() []chaos.ARMOp {
	c.opsMu.Lock()
	defer c.opsMu.Unlock()
	return append([]chaos.ARMOp(nil), c.ops...)
}

// armBacked reports whether f acts through ARM or waits on ACI (and so
// runs under the ARM budget rather than the caller's deadline).
func armBacked(f chaos.Fault) bool {
	switch f.(type) {
	case *chaos.AzureCrash, *chaos.AzureOutage, *sidecar.RemoteStop:
		return true
	}
	return false
}

// within runs op on f under the ARM budget when f is ARM-backed (detached
// from the caller's deadline, which the shared scenarios size for local
// processes), else under ctx.
func (c *Cluster) within(ctx context.Context, f chaos.Fault, op func(context.Context) error) error {
	if !armBacked(f) {
		return op(ctx)
	}
	bctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.cfg.ARMBudget)
	defer cancel()
	err := op(bctx)
	if err != nil && bctx.Err() != nil {
		return fmt.Errorf("%w (not done within the ARM budget of %v; raise %s)", err, c.cfg.ARMBudget, EnvARMBudget)
	}
	return err
}

// Prepare has nothing to make: the deployment made the workers.
func (c *Cluster) Prepare(...cluster.Option) {}

// Start returns the first n deployed workers once each answers its status.
// Options cannot change a deployed worker's flags and are refused.
func (c *Cluster) Start(ctx context.Context, n int, opts ...cluster.Option) ([]cluster.Worker, error) {
	if len(opts) > 0 {
		return nil, errors.New("azure: worker options are fixed by the deployment (e.g. the --unsafe-no-step-down control runs only locally)")
	}
	if n > len(c.workers) {
		return nil, fmt.Errorf("azure: %d workers asked for, %d deployed (set %s)", n, len(c.workers), EnvWorkers)
	}
	out := make([]cluster.Worker, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		w := c.workers[i]
		out[i] = w
		wg.Go(func() {
			tick := time.NewTicker(c.cfg.Poll)
			defer tick.Stop()
			for {
				_, err := w.Status(ctx)
				if err == nil {
					return
				}
				select {
				case <-ctx.Done():
					errs[i] = fmt.Errorf("azure: %s does not answer: %w", w.name, err)
					return
				case <-tick.C:
				}
			}
		})
	}
	wg.Wait()
	return out, errors.Join(errs...)
}

func (c *Cluster) Workers() []cluster.Worker {
	out := make([]cluster.Worker, len(c.workers))
	for i, w := range c.workers {
		out[i] = w
	}
	return out
}

// leaders finds the leader among the container groups: a stopped group
// cannot answer; a round of polling comes every second, as the sidecar
// relays a status every second.
func (c *Cluster) leaders() cluster.LeaderFinder {
	return cluster.LeaderFinder{
		List: c.Workers,
		Unaskable: func(w cluster.Worker) error {
			if !w.Running() {
				return errors.New("stopped")
			}
			return nil
		},
		Round: execTimeout, Poll: time.Second,
	}
}

func (c *Cluster) Leader(t testing.TB) cluster.Worker {
	t.Helper()
	return c.leaders().Leader(t)
}

func (c *Cluster) WaitLeader(t testing.TB, timeout time.Duration, except ...string) cluster.Worker {
	t.Helper()
	return c.leaders().WaitLeader(t, timeout, except...)
}

func (c *Cluster) FindLeader(timeout time.Duration, except ...string) (cluster.Worker, error) {
	return c.leaders().FindLeader(timeout, except...)
}

// Translate returns the Azure fault that realises f on target: the process
// faults become ARM operations on the target's container group, the network
// faults a plan for its sidecar, the outage a network rule on the account.
// Pause has no Azure form (chaos.ACIPauseReason).
func (c *Cluster) Translate(f chaos.Fault, target cluster.Worker) (chaos.Fault, error) {
	var w *worker
	if target != nil {
		aw, ok := target.(*worker)
		if !ok {
			return nil, fmt.Errorf("azure: %T is not an Azure worker", target)
		}
		w = aw
	}
	needWorker := func() error {
		if w == nil {
			return fmt.Errorf("%w: %s needs a target worker", chaos.ErrNoTarget, f.Kind())
		}
		return nil
	}
	needGroups := func() error {
		if err := needWorker(); err != nil {
			return err
		}
		if c.cfg.GroupsClient == nil {
			return fmt.Errorf("%w: %s needs the ARM container groups client", chaos.ErrNoTarget, f.Kind())
		}
		return nil
	}
	switch f := f.(type) {
	case *chaos.Crash:
		if err := needGroups(); err != nil {
			return nil, err
		}
		return &chaos.AzureCrash{Restart: f.Restart, Group: c.group(w)}, nil
	case *chaos.Stop:
		// ARM has no documented graceful stop (a restart is not documented
		// to SIGTERM; `az container stop` is reported to SIGKILL), so the
		// worker is asked through its sidecar and SIGTERMs itself; ACI's
		// restart policy starts it again.
		if err := needWorker(); err != nil {
			return nil, err
		}
		if w.ctl == nil {
			return nil, fmt.Errorf("%w: graceful stop needs the chaos sidecar (the worker is asked on its control endpoint; ACI has no documented graceful stop)", chaos.ErrUnsupported)
		}
		return &sidecar.RemoteStop{Restart: f.Restart, Controller: w.ctl, Worker: w.name}, nil
	case *chaos.Pause:
		return nil, fmt.Errorf("%w: pause: %s", chaos.ErrUnsupported, chaos.ACIPauseReason)
	case *chaos.Latency, *chaos.Timeout, *chaos.Reset, *chaos.Partition:
		if err := needWorker(); err != nil {
			return nil, err
		}
		if w.ctl == nil {
			return nil, fmt.Errorf("%w: %s needs the chaos sidecar (deploy with chaos_sidecar.enabled)", chaos.ErrUnsupported, f.Kind())
		}
		return &sidecar.Remote{Fault: f, Controller: w.ctl, Worker: w.name}, nil
	case *chaos.Outage:
		if c.cfg.Accounts == nil {
			return nil, fmt.Errorf("%w: outage needs the ARM storage accounts client", chaos.ErrNoTarget)
		}
		return &chaos.AzureOutage{Accounts: c.cfg.Accounts, ResourceGroup: c.cfg.ResourceGroup, Account: c.cfg.StorageAccount,
			Probe: c.reachable, ProbeEvery: c.cfg.Poll, OnOp: c.recordOp}, nil
	case *chaos.DeleteContainer:
		return nil, fmt.Errorf("azure: cannot inject %T", f) // the lock's container is the deployment's
	case chaos.StorageTarget: // the operator and state faults, straight to storage
		f.SetStorage(c.cfg.Leases, c.cfg.LockBlob)
		return f.(chaos.Fault), nil
	case *chaos.AzureCrash:
		if f.Group == nil {
			if err := needGroups(); err != nil {
				return nil, err
			}
			f.Group = c.group(w)
		}
		return f, nil
	case *chaos.AzureOutage, *sidecar.Remote, *sidecar.RemoteStop:
		return f, nil
	}
	return nil, fmt.Errorf("azure: cannot inject %T", f)
}

// reachable probes the data plane from the harness: a 403 means the network
// rule denies us (the outage is in effect).
func (c *Cluster) reachable(ctx context.Context) (bool, error) {
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_, err := c.cfg.Leases.GetProperties(pctx, nil)
	var re *azcore.ResponseError
	switch {
	case err == nil:
		return true, nil
	case errors.As(err, &re) && re.StatusCode == http.StatusForbidden:
		return false, nil
	}
	return false, err
}

// Inject realises f on target and records it. The record starts before the
// ARM call (a crash stamped a moment early is harmless to the checker; a late
// one would lengthen the victim's granted belief) and names the worker by its
// identity, the group name.
func (c *Cluster) Inject(ctx context.Context, f chaos.Fault, target cluster.Worker) error {
	real, err := c.Translate(f, target)
	if err != nil {
		return err
	}
	params, _ := json.Marshal(f)
	rec := cluster.FaultRecord{Kind: string(real.Kind()), Target: real.Target(), Start: time.Now(), Params: params}
	if bl, ok := real.(*chaos.BreakLease); ok {
		rec.Target = bl.Target()
	}
	err = c.within(ctx, real, real.Inject)
	c.timeline.Add(f, real, rec)
	if err != nil {
		return fmt.Errorf("azure: inject %s on %s: %w", rec.Kind, rec.Target, err)
	}
	if w, ok := target.(*worker); ok && real.Kind() == chaos.KindCrash {
		w.running.Store(false)
	}
	c.cfg.Logf("fault: %s on %s %s", rec.Kind, rec.Target, params)
	return nil
}

// Remove removes the fault f (as the scenario passed it) and closes its record.
func (c *Cluster) Remove(ctx context.Context, f chaos.Fault) error {
	real, rec, ok := c.timeline.Open(f)
	if !ok {
		return f.Remove(ctx)
	}
	if err := c.within(ctx, real, real.Remove); err != nil {
		return fmt.Errorf("azure: remove %s on %s: %w", rec.Kind, rec.Target, err)
	}
	if cr, ok := real.(*chaos.AzureCrash); ok && cr.Restart {
		for _, w := range c.workers {
			if w.name == cr.Target() {
				w.running.Store(true)
			}
		}
	}
	c.timeline.Close(f)
	c.cfg.Logf("healed: %s on %s", rec.Kind, rec.Target)
	return nil
}

// Heal removes every fault still in place, newest first.
func (c *Cluster) Heal(ctx context.Context) error {
	return c.timeline.Heal(ctx, c.Remove)
}

// Faults is the timeline so far (all scenarios on this deployment).
func (c *Cluster) Faults() []cluster.FaultRecord { return c.timeline.Records() }

// History downloads every history blob of the deployment's workers into
// cfg.Dir and samples each worker's liveness over window: a worker contends
// if its sidecar counted storage traffic from it during the window (without a
// sidecar: if it answered its status with a role).
func (c *Cluster) History(ctx context.Context, window time.Duration) (cluster.History, error) {
	h := cluster.History{Start: c.start, Faults: c.Faults()}
	before := c.traffic(ctx)
	select {
	case <-time.After(window):
	case <-ctx.Done():
		return h, ctx.Err()
	}
	after := c.traffic(ctx)
	h.End = time.Now()
	files, err := downloadHistory(ctx, c.cfg.History, c.cfg.Groups, c.cfg.Dir, c.cfg.Logf)
	if err != nil {
		return h, err
	}
	h.Files = files
	for i, w := range c.workers {
		alive := w.alive(ctx)
		contending := false
		if c.cfg.Sidecar {
			contending = alive && moved(before[i], after[i])
		} else if st, err := w.Status(ctx); err == nil {
			contending = alive && (st.Role == "leader" || st.Role == "follower")
		}
		// History and Log stay empty: a group's incarnations share its
		// identity and each has its own blob (all in Files); the logs are in
		// Log Analytics.
		h.Workers = append(h.Workers, cluster.WorkerState{Slot: w.slot, Identity: w.name, Alive: alive, Contending: contending})
	}
	return h, nil
}

// count is a sidecar's upstream byte count and when that sidecar started.
type count struct {
	bytes   int64 // -1 when unknown
	started time.Time
}

// moved reports whether a worker sent anything to storage between two
// samples of its sidecar's count.
func moved(before, after count) bool {
	switch {
	case before.bytes < 0 || after.bytes < 0:
		return false
	case !after.started.Equal(before.started): // the sidecar restarted in between: its count starts again
		return after.bytes > 0
	}
	return after.bytes > before.bytes
}

// traffic reads each sidecar's upstream byte count.
func (c *Cluster) traffic(ctx context.Context) []count {
	out := make([]count, len(c.workers))
	for i, w := range c.workers {
		out[i].bytes = -1
		if w.ctl == nil {
			continue
		}
		if st, ok, err := w.ctl.Store.ReadState(ctx); err == nil && ok && time.Since(st.At) < c.cfg.StatusMaxAge+c.cfg.Poll {
			out[i] = count{bytes: st.Upstream, started: st.Started}
		}
	}
	return out
}

// DownloadHistory copies the append blobs <identity>/<start-ns>-<n>.jsonl of
// the given identities from the history container into dir, one file per
// blob, and returns the files. Every listing and every blob is retried with
// backoff while storage refuses (a 403 lingering after an outage's rule is
// lifted), and a blob is always written whole, so no record is lost; it
// gives up when ctx ends.
func DownloadHistory(ctx context.Context, hc *container.Client, identities []string, dir string) ([]string, error) {
	return downloadHistory(ctx, hc, identities, dir, nil)
}

func downloadHistory(ctx context.Context, hc *container.Client, identities []string, dir string, logf func(string, ...any)) ([]string, error) {
	var files []string
	for _, id := range identities {
		var names []string
		err := retryStorage(ctx, "list history of "+id, logf, func() error {
			names = names[:0]
			prefix := id + "/"
			pager := hc.NewListBlobsFlatPager(&container.ListBlobsFlatOptions{Prefix: &prefix})
			for pager.More() {
				page, err := pager.NextPage(ctx)
				if err != nil {
					return err
				}
				for _, it := range page.Segment.BlobItems {
					names = append(names, *it.Name)
				}
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("azure: list history of %s: %w", id, err)
		}
		for _, name := range names {
			dst := filepath.Join(dir, id, filepath.Base(name))
			if err := retryStorage(ctx, "read history "+name, logf, func() error { return download(ctx, hc, name, dst) }); err != nil {
				return nil, err
			}
			files = append(files, dst)
		}
	}
	return files, nil
}

// download writes blob name to dst whole: into a temporary file renamed
// into place only after the full body arrived.
func download(ctx context.Context, hc *container.Client, name, dst string) error {
	resp, err := hc.NewBlobClient(name).DownloadStream(ctx, nil)
	if err != nil {
		return fmt.Errorf("azure: read history %s: %w", name, err)
	}
	defer resp.Body.Close()
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	tmp := dst + ".part"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		os.Remove(tmp)
		return fmt.Errorf("azure: read history %s: %w", name, err)
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, dst)
}

// Stop heals what is still injected and clears every sidecar plan; it
// destroys nothing. Safe to call twice.
func (c *Cluster) Stop() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := c.Heal(ctx); err != nil {
		c.cfg.Logf("azure: stop: heal: %v", err)
	}
	for _, w := range c.workers {
		if w.ctl != nil {
			if err := w.ctl.Clear(ctx); err != nil {
				c.cfg.Logf("azure: stop: clear the plan of %s: %v", w.name, err)
			}
		}
	}
}

// worker is one container group.
type worker struct {
	c       *Cluster
	slot    string
	name    string
	ctl     *sidecar.Controller
	running atomic.Bool // false between a crash and its restart
}

func (w *worker) Slot() string     { return w.slot }
func (w *worker) Identity() string { return w.name }
func (w *worker) Running() bool    { return w.running.Load() }

// alive asks ARM whether the group runs (falls back to what the cluster knows).
func (w *worker) alive(ctx context.Context) bool {
	if w.c.cfg.GroupsClient == nil {
		return w.Running()
	}
	st, err := w.c.group(w).State(ctx)
	if err != nil {
		return w.Running()
	}
	return strings.EqualFold(st, chaos.ACIRunning)
}

// Status is the worker's own /status: relayed by its sidecar when that is
// fresh, otherwise asked through ACI exec (StatusCommand, `/status`).
func (w *worker) Status(ctx context.Context) (cluster.Status, error) {
	var relayErr error
	if w.ctl != nil {
		st, err := w.relayed(ctx)
		if err == nil {
			return st, nil
		}
		relayErr = err
	}
	if w.c.cfg.Exec == nil {
		if relayErr == nil {
			relayErr = errors.New("no sidecar and no exec")
		}
		return cluster.Status{}, fmt.Errorf("azure: status of %s: %w", w.name, relayErr)
	}
	ectx, cancel := context.WithTimeout(ctx, execTimeout)
	defer cancel()
	out, err := w.c.cfg.Exec.Exec(ectx, w.name, "worker", StatusCommand)
	if err != nil {
		return cluster.Status{}, errors.Join(relayErr, err)
	}
	return ParseStatus(out)
}

func (w *worker) relayed(ctx context.Context) (cluster.Status, error) {
	st, ok, err := w.ctl.Store.ReadState(ctx)
	switch {
	case err != nil:
		return cluster.Status{}, err
	case !ok:
		return cluster.Status{}, errors.New("the sidecar has written no state yet")
	case st.WorkerError != "":
		return cluster.Status{}, fmt.Errorf("the sidecar could not read the worker's status: %s", st.WorkerError)
	case len(st.Worker) == 0:
		return cluster.Status{}, errors.New("the sidecar relays no status")
	}
	if age := time.Since(st.WorkerAt); age > w.c.cfg.StatusMaxAge || age < -w.c.cfg.StatusMaxAge {
		return cluster.Status{}, fmt.Errorf("the relayed status is %v old", age.Round(time.Millisecond))
	}
	return ParseStatus(string(st.Worker))
}

// ParseStatus reads a /status document from command output that may carry
// terminal noise around it.
func ParseStatus(out string) (cluster.Status, error) {
	i, j := strings.IndexByte(out, '{'), strings.LastIndexByte(out, '}')
	if i < 0 || j < i {
		return cluster.Status{}, fmt.Errorf("azure: no status document in %q", clip(out, 200))
	}
	var st cluster.Status
	if err := json.Unmarshal([]byte(out[i:j+1]), &st); err != nil {
		return cluster.Status{}, fmt.Errorf("azure: status %q: %w", clip(out, 200), err)
	}
	if st.Identity == "" || st.Role == "" {
		return cluster.Status{}, fmt.Errorf("azure: status without identity or role: %q", clip(out, 200))
	}
	return st, nil
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
