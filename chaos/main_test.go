package chaos

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/blobleader/blobleader/worker/azuritetest"
	"github.com/blobleader/blobleader/worker/stalltest"
	"github.com/blobleader/blobleader/worker/supervise"
)

// The test binary doubles as the fixture process for the process faults:
// started with CHAOS_FIXTURE set, it beats a heartbeat file until signalled.
const fixtureEnv = "CHAOS_FIXTURE"

func TestMain(m *testing.M) {
	if mode := os.Getenv(fixtureEnv); mode == "noclone3" || mode == "probe-clone3" {
		os.Exit(noclone3Fixture(mode))
	}
	if mode := os.Getenv(fixtureEnv); mode != "" {
		os.Exit(fixture(mode, os.Getenv("CHAOS_FIXTURE_BEAT")))
	}
	code := m.Run()
	stopAzurite()
	os.Exit(code)
}

// fixture beats (rewrites) the file beat every 5 ms. On SIGTERM it exits 0
// ("graceful"), unless mode is "stubborn", which ignores SIGTERM; "chatty"
// also writes a line to stderr before each beat. An "escaper" starts, on
// EscapeSignal, a sleep in a new session and one in a new process group,
// and writes their pids to beat+".jobs".
func fixture(mode, beat string) int {
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM)
	escape := make(chan os.Signal, 1)
	if mode == "escaper" {
		signal.Notify(escape, EscapeSignal)
	}
	if mode == "guarded" {
		// A child started as a group guard (argv[0]), sleeping until killed.
		g := &exec.Cmd{Path: os.Args[0], Args: []string{supervise.GuardName, "-test.run=^$"},
			Env: append(os.Environ(), fixtureEnv+"=sleeper")}
		if err := g.Start(); err == nil {
			go func() { _ = g.Wait() }()
		}
	}
	if mode == "shimmed" {
		// A child started as a command shim (argv[0]), whose own child (the
		// "command") leaves a grandchild: three sleepers below the fixture.
		g := &exec.Cmd{Path: os.Args[0], Args: []string{supervise.ShimName, "-test.run=^$"},
			Env: append(os.Environ(), fixtureEnv+"=sleeper-with-child", "CHAOS_FIXTURE_DEPTH=2")}
		if err := g.Start(); err == nil {
			go func() { _ = g.Wait() }()
		}
	}
	if mode == "sleeper-with-child" {
		if depth, _ := strconv.Atoi(os.Getenv("CHAOS_FIXTURE_DEPTH")); depth > 0 {
			exe, _ := os.Executable() // argv[0] may be a shim's name
			c := exec.Command(exe, "-test.run=^$")
			c.Env = append(os.Environ(), "CHAOS_FIXTURE_DEPTH="+strconv.Itoa(depth-1))
			if err := c.Start(); err == nil {
				go func() { _ = c.Wait() }()
			}
		}
		select {}
	}
	if mode == "namer" {
		// A child with another process name (comm "sleep").
		if c := exec.Command("sleep", "60"); c.Start() == nil {
			go func() { _ = c.Wait() }()
		}
	}
	walk := make(chan os.Signal, 1)
	if mode == "walker" {
		signal.Notify(walk, WalkerSignal)
	}
	if mode == "sleeper" {
		select {}
	}
	tick := time.NewTicker(5 * time.Millisecond)
	for n := 0; ; n++ {
		select {
		case <-escape:
			var pids []byte
			for _, attr := range []*syscall.SysProcAttr{{Setsid: true}, {Setpgid: true}} {
				c := exec.Command("sleep", "60")
				c.SysProcAttr = attr
				if err := c.Start(); err == nil {
					pids = fmt.Appendf(pids, "%d\n", c.Process.Pid)
				}
			}
			_ = os.WriteFile(beat+".jobs", pids, 0o644)
		case <-walk:
			if err := StartForkWalker(beat + ".walk"); err != nil {
				fmt.Fprintln(os.Stderr, err)
			}
		case <-term:
			if mode != "stubborn" {
				return 0
			}
		case <-tick.C:
			if mode == "chatty" { // logs every beat: a blocked stderr stops it
				fmt.Fprintf(os.Stderr, "{\"msg\":\"beat\",\"n\":%d}\n", n)
			}
			writeBeat(beat, n)
		}
	}
}

// writeBeat replaces the heartbeat file in one step (a new file renamed
// over it): a reader sees the old beat or the new one, never the empty file
// between a truncate and a write.
func writeBeat(beat string, n int) {
	tmp := beat + ".next"
	if os.WriteFile(tmp, []byte(strconv.Itoa(n)), 0o644) == nil {
		_ = os.Rename(tmp, beat)
	}
}

// proc is a Process backed by a fixture child: the same contract the local
// cluster's workers implement, with real signals and a real /proc state.
type proc struct {
	t    *testing.T
	mode string
	beat string
	wrap func(argv []string) ([]string, error) // a Launch's Wrap, or nil

	mu       sync.Mutex
	cmd      *exec.Cmd
	exited   chan struct{}
	n        int // incarnation
	exitErrs []error
}

func startFixture(t *testing.T, mode string) *proc {
	t.Helper()
	p := &proc{t: t, mode: mode, beat: filepath.Join(t.TempDir(), "beat")}
	if err := p.start(); err != nil {
		t.Fatalf("start fixture: %v", err)
	}
	t.Cleanup(p.kill)
	// The first beat comes after the SIGTERM handler is installed.
	if err := p.waitBeating(ctxT(t, 10*time.Second), -1); err != nil {
		t.Fatal(err)
	}
	return p
}

func (p *proc) start() error {
	_ = os.Remove(p.beat)
	p.mu.Lock()
	defer p.mu.Unlock()
	argv := []string{os.Args[0], "-test.run=^$"}
	if p.wrap != nil {
		var err error
		if argv, err = p.wrap(argv); err != nil {
			return err
		}
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), fixtureEnv+"="+p.mode, "CHAOS_FIXTURE_BEAT="+p.beat)
	// A process group of its own whose parent (this test) is in the same
	// session: never orphaned, so the kernel acts on job-control stops
	// (SIGTSTP, SIGTTIN, SIGTTOU are discarded in an orphaned group).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return err
	}
	exited := make(chan struct{})
	go func() {
		err := cmd.Wait()
		p.mu.Lock()
		p.exitErrs = append(p.exitErrs, err)
		p.mu.Unlock()
		close(exited)
	}()
	p.cmd, p.exited = cmd, exited
	p.n++
	return nil
}

func (p *proc) Name() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return fmt.Sprintf("fixture.%d", p.n)
}

func (p *proc) Signal(sig syscall.Signal) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cmd.Process.Signal(sig)
}

func (p *proc) Pid() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cmd.Process.Pid
}

func (p *proc) Exited() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.exited
}

func (p *proc) Restart(ctx context.Context) error {
	if running(p) == nil {
		return errors.New("fixture still running")
	}
	return p.start()
}

func (p *proc) Stopped() (bool, error) {
	p.mu.Lock()
	pid := p.cmd.Process.Pid
	p.mu.Unlock()
	return ProcStopped(pid)
}

// lastExit is how the latest incarnation ended (valid once Exited is closed).
func (p *proc) lastExit() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.exitErrs[len(p.exitErrs)-1]
}

func (p *proc) kill() {
	p.mu.Lock()
	cmd, exited := p.cmd, p.exited
	p.mu.Unlock()
	// A stopped process only dies of SIGKILL once continued on some kernels'
	// accounting; SIGCONT first keeps the cleanup uniform.
	_ = cmd.Process.Signal(syscall.SIGCONT)
	_ = cmd.Process.Kill()
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		p.t.Errorf("fixture %d did not exit after SIGKILL", cmd.Process.Pid)
	}
}

// beats returns the fixture's last heartbeat number (-1 if none yet).
func (p *proc) beats() int {
	b, err := os.ReadFile(p.beat)
	if err != nil {
		return -1 // no beat yet
	}
	n, err := strconv.Atoi(string(b))
	if err != nil {
		// writeBeat replaces the file whole: this is a bug of the fixture,
		// and a -1 taken for a reading fails or passes a test falsely.
		p.t.Errorf("the fixture's heartbeat file %s holds %q: torn", p.beat, b)
		return -1
	}
	return n
}

// waitBeating waits until the heartbeat moves past from.
func (p *proc) waitBeating(ctx context.Context, from int) error {
	for {
		if p.beats() > from {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("fixture heartbeat stuck at %d: %w", from, ctx.Err())
		case <-time.After(5 * time.Millisecond):
		}
	}
}

func ctxT(t *testing.T, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// waitFor polls cond until it holds: for timeout plus the stall a CPU
// probe, running for the wait, measured meanwhile (stalltest's
// Probe.Await: at most 3×, then inconclusive, a failure, never a pass). A
// process the test awaits starts late on a busy machine; that is not a bug.
func waitFor(t *testing.T, what string, timeout time.Duration, cond func() (bool, string)) {
	t.Helper()
	stalltest.Await(t, stalltest.Config{}, what, timeout, cond)
}

// --- Azurite, shared by the network tests of this binary ---

var (
	azOnce sync.Once
	azSrv  *azuritetest.Server
	azErr  error
)

func startAzurite(t *testing.T) *azuritetest.Server {
	t.Helper()
	azOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		azSrv, azErr = azuritetest.Start(ctx)
	})
	if errors.Is(azErr, azuritetest.ErrNotInstalled) {
		t.Skipf("Azurite is not installed (run `make node_modules`): %v", azErr)
	}
	if azErr != nil {
		t.Fatalf("start Azurite: %v", azErr)
	}
	return azSrv
}

func stopAzurite() {
	if azSrv != nil {
		azSrv.Stop()
	}
}

// containerVia returns a client for a fresh container, reached through
// endpoint (a proxy's address or Azurite's), with SDK retries off so every
// fault shows on the first try.
// Each client has its own connection pool (azcore shares one by default).
func containerVia(t *testing.T, hostport, name string) *container.Client {
	t.Helper()
	return containerWith(t, hostport, name, &http.Transport{})
}

// containerFresh opens a new connection for every request.
func containerFresh(t *testing.T, hostport, name string) *container.Client {
	t.Helper()
	return containerWith(t, hostport, name, &http.Transport{DisableKeepAlives: true})
}

func containerWith(t *testing.T, hostport, name string, tr *http.Transport) *container.Client {
	t.Helper()
	t.Cleanup(tr.CloseIdleConnections)
	endpoint := (&url.URL{Scheme: "http", Host: hostport, Path: "/" + azuritetest.Account}).String()
	opts := &azblob.ClientOptions{ClientOptions: policy.ClientOptions{
		Retry:     policy.RetryOptions{MaxRetries: -1},
		Transport: &http.Client{Transport: tr},
	}}
	svc, err := azblob.NewClientFromConnectionString(connString(endpoint), opts)
	if err != nil {
		t.Fatalf("client for %s: %v", endpoint, err)
	}
	return svc.ServiceClient().NewContainerClient(name)
}

// fixtureStorage starts (or reuses) Azurite, creates a container named after
// the test, and returns a direct client and a proxy in front of Azurite.
func fixtureStorage(t *testing.T) (direct *container.Client, px *Proxy) {
	t.Helper()
	srv := startAzurite(t)
	name := containerName(t)
	direct = containerVia(t, fmt.Sprintf("%s:%d", srv.Host, srv.Port), name)
	if _, err := direct.Create(ctxT(t, 10*time.Second), nil); err != nil {
		t.Fatalf("create container %s: %v", name, err)
	}
	px = newProxy(t, name, fmt.Sprintf("%s:%d", srv.Host, srv.Port))
	return direct, px
}

func newProxy(t *testing.T, name, upstream string) *Proxy {
	t.Helper()
	px, err := NewProxy(name, upstream)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(px.Close)
	return px
}

var containerSeq struct {
	sync.Mutex
	n int
}

func containerName(t *testing.T) string {
	containerSeq.Lock()
	defer containerSeq.Unlock()
	containerSeq.n++
	return fmt.Sprintf("chaos-%d-%d", os.Getpid(), containerSeq.n)
}

// probe is one cheap storage round trip.
func probe(ctx context.Context, c *container.Client) error {
	_, err := c.GetProperties(ctx, nil)
	return err
}

// timedProbe probes with its own deadline and reports how long it took.
func timedProbe(c *container.Client, d time.Duration) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	start := time.Now()
	err := probe(ctx, c)
	return time.Since(start), err
}

// put writes a small block blob; exists checks for it.
func put(c *container.Client, name string, d time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	_, err := c.NewBlockBlobClient(name).UploadBuffer(ctx, []byte("x"), nil)
	return err
}

func exists(t *testing.T, c *container.Client, name string) bool {
	t.Helper()
	_, err := c.NewBlobClient(name).GetProperties(ctxT(t, 5*time.Second), nil)
	if err == nil {
		return true
	}
	if bloberror.HasCode(err, bloberror.BlobNotFound) {
		return false
	}
	t.Fatalf("get properties of %s: %v", name, err)
	return false
}

// eventually retries probe through c until it succeeds or ctx ends: after a
// fault is removed the client's pooled connections may still be closing.
func eventually(ctx context.Context, c *container.Client) error {
	for {
		if _, err := timedProbe(c, time.Second); err == nil {
			return nil
		} else if ctx.Err() != nil {
			return fmt.Errorf("storage not reachable again: %w", err)
		}
		select {
		case <-ctx.Done():
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// containerNameOf is the container's name, for a second client on it.
func containerNameOf(c *container.Client) string {
	u, err := azblob.ParseURL(c.URL())
	if err != nil {
		panic(err)
	}
	return u.ContainerName
}

// devAccountKey is Azurite's documented development key. test/azurite's
// AccountKey constant is not valid base64 (reported to the lead); until it is
// fixed, the tests build their connection strings with this one.
const devAccountKey = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="

func connString(endpoint string) string {
	return fmt.Sprintf("DefaultEndpointsProtocol=http;AccountName=%s;AccountKey=%s;BlobEndpoint=%s;",
		azuritetest.Account, devAccountKey, endpoint)
}
