package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/blobleader/blobleader/chaos"
	"github.com/blobleader/blobleader/worker/azuritetest"
	"github.com/blobleader/blobleader/worker/stalltest"
)

// Local is the local backend: Azurite and worker processes on loopback.
type Local struct {
	t             testing.TB
	bin           string
	unsafeBin     string // "" until a worker with Unsafe starts
	dir           string
	params        Params
	containerName string
	blobName      string
	az            *azuritetest.Server
	probe         *StorageProbe    // Azurite asked directly, for the run's evidence
	sched         *stalltest.Probe // the machine's promptness, for the run's timing bounds (docs/chaos.md#a-busy-machine)
	storage       *container.Client
	httpc         *http.Client
	start         time.Time

	mu       sync.Mutex
	workers  []*localWorker
	timeline Timeline
	stopped  bool
}

// injected is a fault on the timeline; End is zero while it is in place.
var _ Cluster = (*Local)(nil)

// LocalConfig configures NewLocal; the zero value is usable.
type LocalConfig struct {
	Params Params // zero: DefaultParams()
	Binary string // zero: WorkerBinary(t)
	// UnsafeBinary runs the workers started with Unsafe. Zero:
	// UnsafeWorkerBinary(t) (built with -tags negativecontrol) when Binary
	// is zero too, else Binary (a stand-in worker serves both).
	UnsafeBinary string
	Container    string // zero: "leases"
	Blob         string // zero: "leader"
}

// NewLocal starts Azurite and returns an empty local cluster; add workers
// with Start. Everything is torn down by t.Cleanup.
func NewLocal(t testing.TB, cfg LocalConfig) *Local {
	t.Helper()
	if cfg.Params == (Params{}) {
		cfg.Params = DefaultParams()
	}
	if cfg.Binary == "" {
		cfg.Binary = WorkerBinary(t)
	} else if cfg.UnsafeBinary == "" {
		cfg.UnsafeBinary = cfg.Binary
	}
	if cfg.Container == "" {
		cfg.Container = "leases"
	}
	if cfg.Blob == "" {
		cfg.Blob = "leader"
	}
	c := &Local{
		t:             t,
		bin:           cfg.Binary,
		unsafeBin:     cfg.UnsafeBinary,
		dir:           t.TempDir(),
		params:        cfg.Params,
		containerName: cfg.Container,
		blobName:      cfg.Blob,
		httpc:         &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}},
		start:         time.Now(),
	}
	t.Cleanup(c.Stop)
	c.sched = stalltest.Start(stalltest.Default)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	az, err := azuritetest.Start(ctx)
	if errors.Is(err, azuritetest.ErrNotInstalled) {
		t.Skipf("Azurite is not installed (run `make node_modules`): %v", err)
	}
	if err != nil {
		t.Fatalf("cluster: start Azurite: %v", err)
	}
	c.az = az
	c.probe = StartStorageProbe(az.BlobEndpoint(), DefaultStorageProbe)
	c.storage, err = containerClient(az.BlobEndpoint(), c.containerName)
	if err != nil {
		t.Fatalf("cluster: storage client: %v", err)
	}
	return c
}

// StorageProbe is the harness's own probe of Azurite (StorageProbe).
func (c *Local) StorageProbe() *StorageProbe { return c.probe }

// SchedProbe is the harness's CPU probe of the machine (package
// stalltest), running from the cluster's start to its Stop.
func (c *Local) SchedProbe() *stalltest.Probe { return c.sched }

// StallIn is the environment's stall in [from, to] as the checker counts
// it: the CPU probe's late wakes and storage's slow answers to its probe,
// overlaps once (docs/chaos.md#a-busy-machine).
func (c *Local) StallIn(from, to time.Time) time.Duration {
	late := c.sched.LateIn(from, to)
	if c.probe != nil {
		late = append(late, c.probe.Slow()...)
	}
	return stalltest.StallIn(late, from, to)
}

// WriteSchedProbe writes the CPU probe's late wakes to dir/cpu-probe.jsonl,
// one stalltest.Wake a line, after a first line with the counts.
func (c *Local) WriteSchedProbe(dir string) error {
	return WriteSchedRecord(filepath.Join(dir, "cpu-probe.jsonl"), c.sched.Record())
}

// WriteSchedRecord writes a CPU probe's record to path: a first line with
// the counts, then one stalltest.Wake a line.
func WriteSchedRecord(path string, r stalltest.Record) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	enc := json.NewEncoder(f)
	err = enc.Encode(map[string]any{"tick": r.Tick.String(), "floor": r.Floor.String(), "since": r.Since, "wakes": r.Wakes, "late": len(r.Late) + int(r.Dropped), "dropped": r.Dropped, "total_ms": r.Total.Milliseconds(), "max_ms": r.Max.Late().Milliseconds()})
	for _, w := range r.Late {
		if err != nil {
			break
		}
		err = enc.Encode(w)
	}
	return errors.Join(err, f.Close())
}

// WriteStorageProbe writes the storage probe's records to
// dir/azurite-probe.jsonl (StorageProbe.WriteJSONL): a failed run's evidence
// of whether storage itself answered.
func (c *Local) WriteStorageProbe(dir string) error {
	if c.probe == nil {
		return errors.New("cluster: no storage probe (Azurite did not start)")
	}
	f, err := os.Create(filepath.Join(dir, "azurite-probe.jsonl"))
	if err != nil {
		return err
	}
	return errors.Join(c.probe.WriteJSONL(f), f.Close())
}

// Dir is the directory holding the histories and logs.
func (c *Local) Dir() string { return c.dir }

// Azurite is the storage server (for tests of the cluster itself).
func (c *Local) Azurite() *azuritetest.Server { return c.az }

func (c *Local) Params() Params { return c.params }

func (c *Local) Storage() *container.Client { return c.storage }

func (c *Local) LockBlob() string { return c.blobName }

// Start adds n workers, each behind its own proxy, concurrently.
func (c *Local) Start(ctx context.Context, n int, opts ...Option) ([]Worker, error) {
	var o workerOpts
	for _, opt := range opts {
		opt(&o)
	}
	c.binaryFor(o) // build the negative control here, on the caller's goroutine
	c.mu.Lock()
	if c.stopped {
		c.mu.Unlock()
		return nil, errors.New("cluster: stopped")
	}
	var added []*localWorker
	for range n {
		slot := fmt.Sprintf("w%d", len(c.workers)+1)
		// worker → toxiproxy (byte faults) → HTTP proxy (request faults) → Azurite
		hp, err := chaos.NewHTTPProxy(slot, fmt.Sprintf("%s:%d", c.az.Host, c.az.Port))
		if err != nil {
			c.mu.Unlock()
			return nil, err
		}
		px, err := chaos.NewProxy(slot, hp.Addr())
		if err != nil {
			hp.Close()
			c.mu.Unlock()
			return nil, err
		}
		w := &localWorker{c: c, slot: slot, proxy: px, http: hp, opts: o, httpc: c.httpc}
		c.workers = append(c.workers, w)
		added = append(added, w)
	}
	c.mu.Unlock()

	errs := make([]error, len(added))
	var wg sync.WaitGroup
	for i, w := range added {
		wg.Go(func() { errs[i] = w.start(ctx) })
	}
	wg.Wait()
	out := make([]Worker, len(added))
	for i, w := range added {
		out[i] = w
	}
	return out, errors.Join(errs...)
}

// WriteRequestLogs writes each worker's HTTP proxy record of its latest
// requests (chaos.RequestLog) to dir/<slot>-requests.jsonl: a failed run's
// evidence of which hop stalled.
func (c *Local) WriteRequestLogs(dir string) error {
	c.mu.Lock()
	workers := append([]*localWorker(nil), c.workers...)
	c.mu.Unlock()
	var errs []error
	for _, w := range workers {
		f, err := os.Create(filepath.Join(dir, w.slot+"-requests.jsonl"))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		errs = append(errs, w.http.Requests().WriteJSONL(f), f.Close())
	}
	return errors.Join(errs...)
}

func (c *Local) Workers() []Worker {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]Worker, len(c.workers))
	for i, w := range c.workers {
		out[i] = w
	}
	return out
}

// leaders finds the leader among the local workers: a worker that is not
// running or is paused (SIGSTOP) cannot answer; one status request waits
// 750 ms at most, and a round of polling comes every 100 ms.
func (c *Local) leaders() LeaderFinder {
	return LeaderFinder{
		List: c.Workers,
		Unaskable: func(w Worker) error {
			lw := w.(*localWorker)
			if !lw.Running() {
				return errors.New("not running")
			}
			if stopped, _ := lw.Stopped(); stopped {
				return errors.New("paused")
			}
			return nil
		},
		Ask: 750 * time.Millisecond, Round: 5 * time.Second, Poll: 100 * time.Millisecond, Stall: c.StallIn,
	}
}

// Leader fails t unless exactly one worker reports role "leader" now.
func (c *Local) Leader(t testing.TB) Worker {
	t.Helper()
	return c.leaders().Leader(t)
}

// WaitLeader polls until exactly one worker leads (and it is not one of
// except), or fails t after timeout.
func (c *Local) WaitLeader(t testing.TB, timeout time.Duration, except ...string) Worker {
	t.Helper()
	return c.leaders().WaitLeader(t, timeout, except...)
}

// FindLeader is WaitLeader without a testing.TB.
func (c *Local) FindLeader(timeout time.Duration, except ...string) (Worker, error) {
	return c.leaders().FindLeader(timeout, except...)
}

// bind gives f the local handles it acts on.
func (c *Local) bind(f chaos.Fault, target Worker) error {
	var w *localWorker
	if target != nil {
		lw, ok := target.(*localWorker)
		if !ok {
			return fmt.Errorf("cluster: %T is not a local worker", target)
		}
		w = lw
	}
	need := func() error {
		if w == nil {
			return fmt.Errorf("%w: %s needs a target worker", chaos.ErrNoTarget, f.Kind())
		}
		return nil
	}
	switch f := f.(type) {
	case chaos.ProcessTarget: // Crash, Stop, Pause, SupervisorFreeze, JobStop, GuardKill, ForeignOrphan
		f.SetProcess(w)
		return need()
	case chaos.StorageTarget: // the operator and state faults, straight to storage
		f.SetStorage(c.storage, c.blobName)
		return nil
	case chaos.RequestTarget: // in the worker's HTTP-aware proxy
		if err := need(); err != nil {
			return err
		}
		f.SetHTTPProxy(w.http)
		return nil
	case *chaos.Escape, *chaos.ForkWalker:
		return nil // aimed at a command's pid, not at a worker
	case *chaos.BlockedOutput:
		return bindPipe(&f.Pipe, w, need)
	case *chaos.OutputReaderGone:
		return bindPipe(&f.Pipe, w, need)
	case *chaos.Latency:
		return c.bindProxy(&f.Proxy, w)
	case *chaos.Timeout:
		return c.bindProxy(&f.Proxy, w)
	case *chaos.Reset:
		return c.bindProxy(&f.Proxy, w)
	case *chaos.Partition:
		return c.bindProxy(&f.Proxy, w)
	case *chaos.Outage:
		f.Proxies = nil
		c.mu.Lock()
		for _, w := range c.workers {
			f.Proxies = append(f.Proxies, w.proxy)
		}
		c.mu.Unlock()
		return nil
	}
	return fmt.Errorf("cluster: cannot bind fault %T", f)
}

// bindPipe hands an output fault the output pipe of its target worker.
func bindPipe(dst **chaos.OutputPipe, w *localWorker, need func() error) error {
	if err := need(); err != nil {
		return err
	}
	var err error
	*dst, err = w.output()
	return err
}

func (c *Local) bindProxy(dst **chaos.Proxy, w *localWorker) error {
	if w == nil {
		return fmt.Errorf("%w: a network fault needs a target worker (use Outage for all)", chaos.ErrNoTarget)
	}
	*dst = w.proxy
	return nil
}

// Inject binds f, injects it and records it. The record starts when the fault
// is requested; a crash's, when the process is known dead (so the checker
// never ends a crashed leader's belief before the kill really happened).
func (c *Local) Inject(ctx context.Context, f chaos.Fault, target Worker) error {
	if err := c.bind(f, target); err != nil {
		return err
	}
	params, _ := json.Marshal(f)
	rec := FaultRecord{Kind: string(f.Kind()), Target: recordedTarget(f, target), Start: time.Now(), Params: params}
	if err := f.Inject(ctx); err != nil {
		err = fmt.Errorf("cluster: inject %s on %s: %w", f.Kind(), rec.Target, err)
		if nothingHappened(err) {
			return err
		}
		// It may be partly in place (a kill sent, some proxies cut): undo
		// what can be undone and keep it on the timeline.
		rerr := f.Remove(context.WithoutCancel(ctx))
		rec.End = time.Now()
		c.record(f, rec)
		return errors.Join(err, rerr)
	}
	if f.Kind() == chaos.KindCrash {
		rec.Start = time.Now()
	}
	rec.Target = recordedTarget(f, target)
	c.record(f, rec)
	c.t.Logf("fault: %s on %s %s", rec.Kind, rec.Target, params)
	return nil
}

// recordedTarget names what a fault hits as the histories do: a fault bound
// to one worker is recorded under that worker's current incarnation (w1.2
// after a restart), not its slot or proxy name, so the checker can tell
// whether it hit the leader of the moment.
func recordedTarget(f chaos.Fault, target Worker) string {
	if target != nil && f.Target() != chaos.TargetAll {
		return target.Identity()
	}
	return f.Target()
}

// nothingHappened reports Inject errors after which the fault certainly
// had no effect (bad parameters, no target, already injected, nothing to hit).
func nothingHappened(err error) bool {
	return errors.Is(err, chaos.ErrInvalid) || errors.Is(err, chaos.ErrNoTarget) ||
		errors.Is(err, chaos.ErrInjected) || errors.Is(err, chaos.ErrNotRunning)
}

func (c *Local) record(f chaos.Fault, rec FaultRecord) { c.timeline.Add(f, f, rec) }

// Remove removes f and closes its record.
func (c *Local) Remove(ctx context.Context, f chaos.Fault) error {
	_, rec, ok := c.timeline.Open(f)
	if !ok {
		return f.Remove(ctx)
	}
	if err := f.Remove(ctx); err != nil {
		return fmt.Errorf("cluster: remove %s on %s: %w", rec.Kind, rec.Target, err)
	}
	c.timeline.Close(f)
	c.t.Logf("healed: %s on %s", rec.Kind, rec.Target)
	return nil
}

// Heal removes every fault still in place, newest first, and reports every
// failure.
func (c *Local) Heal(ctx context.Context) error {
	return c.timeline.Heal(ctx, c.Remove)
}

// Faults returns the timeline so far.
func (c *Local) Faults() []FaultRecord { return c.timeline.Records() }

// History samples each running incarnation's lease request count twice,
// window apart, and returns the run's files, faults and worker states.
func (c *Local) History(ctx context.Context, window time.Duration) (History, error) {
	h := History{Start: c.start, Faults: c.Faults()}
	type sample struct {
		inc *incarnation
		w   *localWorker
		v   float64
		ok  bool
	}
	var samples []*sample
	c.mu.Lock()
	workers := append([]*localWorker(nil), c.workers...)
	c.mu.Unlock()
	for _, w := range workers {
		w.mu.Lock()
		for _, inc := range w.all {
			samples = append(samples, &sample{inc: inc, w: w})
		}
		w.mu.Unlock()
	}
	scrape := func() []float64 {
		vals := make([]float64, len(samples))
		var wg sync.WaitGroup
		for i, s := range samples {
			if s.w.incAlive(s.inc) {
				wg.Go(func() {
					body, err := s.w.get(ctx, s.inc, "/metrics", time.Second)
					if err == nil {
						vals[i], s.ok = contendOps(strings.NewReader(string(body)))
					} else {
						vals[i] = -1
					}
				})
			}
		}
		wg.Wait()
		return vals
	}
	before := scrape()
	select {
	case <-time.After(window):
	case <-ctx.Done():
		return h, ctx.Err()
	}
	after := scrape()
	h.End = time.Now()
	for _, w := range workers {
		recs, _ := w.http.GrantedRenews().Records()
		for _, r := range recs {
			h.Renews = append(h.Renews, GrantedRenew{Slot: w.slot, Path: r.Path, Arrived: r.Arrived, Answered: r.Answered})
		}
	}
	for i, s := range samples {
		alive := s.w.incAlive(s.inc)
		h.Files = append(h.Files, s.inc.history)
		h.Workers = append(h.Workers, WorkerState{
			Slot:       s.w.slot,
			Identity:   s.inc.identity,
			Alive:      alive,
			Contending: alive && s.ok && before[i] >= 0 && after[i] > before[i],
			Unsafe:     s.inc.unsafe,
			History:    s.inc.history,
			Log:        s.inc.log,
		})
	}
	return h, nil
}

func (w *localWorker) incAlive(inc *incarnation) bool {
	select {
	case <-inc.exited:
		return false
	default:
		return true
	}
}

// Stop heals what it can, kills every worker (continuing paused ones), and
// stops the proxies and Azurite. Safe to call twice.
func (c *Local) Stop() {
	c.mu.Lock()
	if c.stopped {
		c.mu.Unlock()
		return
	}
	c.stopped = true
	workers := append([]*localWorker(nil), c.workers...)
	c.mu.Unlock()
	var errs []error
	for _, w := range workers {
		errs = append(errs, w.kill())
		w.proxy.Close()
		w.http.Close()
	}
	if c.probe != nil {
		c.probe.Stop() // before Azurite goes, so its end is no failed probe
	}
	c.sched.Stop()
	if c.az != nil {
		c.az.Stop()
	}
	if err := errors.Join(errs...); err != nil {
		c.t.Errorf("cluster: stop: %v", err)
	}
}

// ConnectionString is an Azurite connection string for a blob endpoint.
func ConnectionString(blobEndpoint string) string { return azuritetest.ConnectionString(blobEndpoint) }

// containerClient reaches the container directly, with a few quick retries.
func containerClient(endpoint, name string) (*container.Client, error) {
	opts := &azblob.ClientOptions{ClientOptions: policy.ClientOptions{
		Retry: policy.RetryOptions{MaxRetries: 3, TryTimeout: 5 * time.Second},
	}}
	svc, err := azblob.NewClientFromConnectionString(ConnectionString(endpoint), opts)
	if err != nil {
		return nil, err
	}
	return svc.ServiceClient().NewContainerClient(name), nil
}

// proxyOf is a worker's proxy (for tests of the cluster itself).
func (c *Local) proxyOf(w Worker) *chaos.Proxy { return w.(*localWorker).proxy }

// Prepare builds, on first use, the binary a Start with opts runs: the
// negative control, whose build takes tens of seconds on a busy machine.
func (c *Local) Prepare(opts ...Option) {
	var o workerOpts
	for _, opt := range opts {
		opt(&o)
	}
	c.binaryFor(o)
}

// binaryFor is the binary a worker runs: the negative-control build for a
// worker started with Unsafe or UnsafeEarlyBreak, built on first use.
func (c *Local) binaryFor(o workerOpts) string {
	if !o.unsafe && !o.earlyBreak {
		return c.bin
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.unsafeBin == "" {
		c.unsafeBin = UnsafeWorkerBinary(c.t)
	}
	return c.unsafeBin
}

// ProcessStates says, for a failed run's log, how the cluster's processes
// stand now: Azurite (answering, or how it exited — a SIGKILL not by Stop
// is something else's kill) and each worker's current process (running,
// stopped by a signal, a zombie, gone). A run whose storage or workers all
// stopped answering at once reads here which it was.
func (c *Local) ProcessStates() []string {
	var out []string
	if c.az != nil {
		if e, ok := c.az.Exited(); ok {
			out = append(out, fmt.Sprintf("Azurite (pid %d) %s", c.az.Pid(), e))
		} else {
			out = append(out, fmt.Sprintf("Azurite (pid %d) runs", c.az.Pid()))
		}
	}
	c.mu.Lock()
	workers := append([]*localWorker(nil), c.workers...)
	c.mu.Unlock()
	for _, w := range workers {
		inc, err := w.current()
		if err != nil {
			out = append(out, fmt.Sprintf("%s: no process", w.slot))
			continue
		}
		out = append(out, fmt.Sprintf("%s (pid %d): %s", inc.identity, inc.cmd.Process.Pid, inc.state()))
	}
	return out
}

// LogTails returns the last n lines of each worker process's log (every
// incarnation, oldest first), named by identity: a failed run's first
// evidence when its files are not kept.
func (c *Local) LogTails(n int) []string {
	c.mu.Lock()
	workers := append([]*localWorker(nil), c.workers...)
	c.mu.Unlock()
	var out []string
	for _, w := range workers {
		w.mu.Lock()
		incs := append([]*incarnation(nil), w.all...)
		w.mu.Unlock()
		for _, inc := range incs {
			b, err := os.ReadFile(inc.log)
			if err != nil {
				out = append(out, fmt.Sprintf("%s: log unreadable: %v", inc.identity, err))
				continue
			}
			lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
			if len(lines) > n {
				lines = lines[len(lines)-n:]
			}
			out = append(out, fmt.Sprintf("%s's log, last %d lines:\n\t%s", inc.identity, len(lines), strings.Join(lines, "\n\t")))
		}
	}
	return out
}
