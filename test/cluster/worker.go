package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/blobleader/blobleader/chaos"
	"github.com/blobleader/blobleader/worker/azuritetest"
)

// localWorker is one worker slot of the local backend: a process behind its
// own proxy. It implements chaos.Process (and chaos.StateReader) for the
// process faults; Restart starts the next incarnation.
type localWorker struct {
	c     *Local
	slot  string
	proxy *chaos.Proxy     // toxiproxy: what the worker dials
	http  *chaos.HTTPProxy // behind proxy, in front of storage
	opts  workerOpts

	mu    sync.Mutex
	n     int // incarnations started
	cur   *incarnation
	all   []*incarnation
	httpc *http.Client
}

// incarnation is one process of a slot.
type incarnation struct {
	identity string
	listen   string
	history  string
	log      string
	unsafe   bool
	output   *chaos.OutputPipe // nil unless BlockableOutput
	cmd      *exec.Cmd
	exited   chan struct{}
	exitErr  error  // valid once exited is closed
	release  func() // gives back listen's reserved port, once the process is gone
}

// state is the incarnation's process state in words, for a failed run's log.
func (inc *incarnation) state() string {
	select {
	case <-inc.exited:
		return fmt.Sprintf("exited (%v)", inc.exitErr)
	default:
	}
	st, err := chaos.ProcState(inc.cmd.Process.Pid)
	switch {
	case err != nil:
		return fmt.Sprintf("unreadable (%v)", err)
	case st == 'T' || st == 't':
		return "stopped by a signal"
	case st == 'Z':
		return "a zombie, not yet reaped"
	default:
		return fmt.Sprintf("running (state %c)", st)
	}
}

var (
	_                    Worker            = (*localWorker)(nil)
	_                    chaos.Process     = (*localWorker)(nil)
	_                    chaos.StateReader = (*localWorker)(nil)
	_                    chaos.PIDProcess  = (*localWorker)(nil)
	errNoIncarnation                       = errors.New("cluster: worker has no process")
	errExitedBeforeReady                   = errors.New("cluster: worker exited before answering /status")
)

func (w *localWorker) Slot() string { return w.slot }

func (w *localWorker) Identity() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.cur == nil {
		return w.slot
	}
	return w.cur.identity
}

// Name is the current identity (chaos.Process).
func (w *localWorker) Name() string { return w.Identity() }

func (w *localWorker) current() (*incarnation, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.cur == nil {
		return nil, errNoIncarnation
	}
	return w.cur, nil
}

func (w *localWorker) Signal(sig syscall.Signal) error {
	inc, err := w.current()
	if err != nil {
		return err
	}
	return inc.cmd.Process.Signal(sig)
}

// Pid is the current incarnation's pid (chaos.PIDProcess); 0 without one.
func (w *localWorker) Pid() int {
	inc, err := w.current()
	if err != nil {
		return 0
	}
	return inc.cmd.Process.Pid
}

func (w *localWorker) Exited() <-chan struct{} {
	inc, err := w.current()
	if err != nil {
		closed := make(chan struct{})
		close(closed)
		return closed
	}
	return inc.exited
}

func (w *localWorker) Running() bool {
	select {
	case <-w.Exited():
		return false
	default:
		return true
	}
}

func (w *localWorker) Stopped() (bool, error) {
	inc, err := w.current()
	if err != nil {
		return false, err
	}
	return chaos.ProcStopped(inc.cmd.Process.Pid)
}

// output is the current incarnation's output pipe (BlockableOutput).
func (w *localWorker) output() (*chaos.OutputPipe, error) {
	inc, err := w.current()
	if err != nil {
		return nil, err
	}
	if inc.output == nil {
		return nil, fmt.Errorf("%w: %s was not started with cluster.BlockableOutput()", chaos.ErrNoTarget, inc.identity)
	}
	return inc.output, nil
}

// OutputBlockable reports whether the current incarnation's stdout and
// stderr go through a pipe chaos.BlockedOutput can block (BlockableOutput).
func (w *localWorker) OutputBlockable() bool {
	_, err := w.output()
	return err == nil
}

// Restart starts the next incarnation once the current one has exited.
func (w *localWorker) Restart(ctx context.Context) error {
	if w.Running() {
		return fmt.Errorf("cluster: restart %s: %w", w.Identity(), errors.New("still running"))
	}
	return w.start(ctx)
}

// start launches a new incarnation and waits until it answers GET /status.
// A port taken between reserving and binding it (by a process outside the
// reservation scheme) is retried once.
func (w *localWorker) start(ctx context.Context) error {
	var err error
	for range 2 {
		var inc *incarnation
		if inc, err = w.spawn(); err != nil {
			return err
		}
		if err = w.waitReady(ctx, inc); !errors.Is(err, errExitedBeforeReady) {
			return err
		}
		// It exited at its listen, before it touched storage (the binary
		// listens first): it never contended, so it is no incarnation of
		// the run (the checker would fail a started worker with no history).
		w.forget(inc)
	}
	return err
}

// forget drops an incarnation that never started from the worker's list.
func (w *localWorker) forget(inc *incarnation) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.all = slices.DeleteFunc(w.all, func(i *incarnation) bool { return i == inc })
	if w.cur == inc {
		w.cur = nil
	}
}

// spawn starts the slot's next incarnation on a port reserved for it
// (azuritetest.HoldPort) until its process is reaped.
func (w *localWorker) spawn() (*incarnation, error) {
	port, release, err := azuritetest.HoldPort()
	if err != nil {
		return nil, err
	}
	c := w.c
	id := w.nextIdentity()
	inc := &incarnation{
		identity: id,
		listen:   "127.0.0.1:" + strconv.Itoa(port),
		history:  filepath.Join(c.dir, id+".jsonl"),
		log:      filepath.Join(c.dir, id+".log"),
		unsafe:   w.opts.unsafe,
		exited:   make(chan struct{}),
		release:  release,
	}
	argv := append([]string{c.binaryFor(w.opts)}, w.args(inc)...)
	if w.opts.launch != nil {
		if argv, err = w.opts.launch.Wrap(argv); err != nil {
			release()
			return nil, fmt.Errorf("cluster: start %s: %w", id, err)
		}
	}
	if err := w.startProcess(inc, argv); err != nil {
		release()
		return nil, err
	}
	w.mu.Lock()
	w.cur = inc
	w.all = append(w.all, inc)
	w.mu.Unlock()
	return inc, nil
}

// nextIdentity is the identity of the slot's next incarnation: the slot's
// name, then w1.2, w1.3, …
func (w *localWorker) nextIdentity() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.n++
	if w.n > 1 {
		return w.slot + "." + strconv.Itoa(w.n)
	}
	return w.slot
}

// args are the worker's flags for incarnation inc: storage through the
// slot's proxy, the cluster's timings, its listen address and history, then
// the options' own (run mode's `run … -- COMMAND` last).
func (w *localWorker) args(inc *incarnation) []string {
	c := w.c
	p := c.params
	endpoint := "http://" + w.proxy.Addr() + "/" + azuritetest.Account
	args := []string{
		"--connection-string", ConnectionString(endpoint),
		"--container", c.containerName,
		"--blob", c.blobName,
		"--identity", inc.identity,
		"--lease-duration", p.LeaseDuration.String(),
		"--renew-deadline", p.RenewDeadline.String(),
		"--renew-interval", p.RenewInterval.String(),
		"--retry-period", p.RetryPeriod.String(),
		"--tick", p.Tick.String(),
		"--shutdown-grace", p.ShutdownGrace.String(),
		"--listen", inc.listen,
		"--history", inc.history,
		"--log-format", "json",
	}
	if p.TakeoverAfter > 0 {
		args = append(args, "--takeover-after", p.TakeoverAfter.String())
	}
	if w.opts.unsafe {
		args = append(args, "--unsafe-no-step-down")
	}
	if w.opts.earlyBreak {
		args = append(args, "--unsafe-early-break")
	}
	args = append(args, w.opts.args...)
	return w.opts.modeArgs(args)
}

// startProcess runs argv as incarnation inc: its output to its log (through a
// blockable pipe when the options ask for one), its own process group,
// and a goroutine that reaps it and closes inc.exited.
func (w *localWorker) startProcess(inc *incarnation, argv []string) error {
	logf, err := os.OpenFile(inc.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	// Only what the worker needs: no Azure credentials from the caller's
	// environment can leak in, and no BLOBLEADER_* overrides.
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "TMPDIR=" + w.c.dir}
	cmd.Stdout, cmd.Stderr = logf, logf
	if w.opts.blockable {
		if inc.output, err = chaos.NewOutputPipe(inc.identity, logf); err != nil {
			logf.Close()
			return err
		}
		cmd.Stdout, cmd.Stderr = inc.output.Writer(), inc.output.Writer()
	}
	// Its own process group, and it dies with the test (procattr_linux.go).
	cmd.SysProcAttr = workerProcAttr()
	if err := cmd.Start(); err != nil {
		if inc.output != nil {
			_ = inc.output.Close(context.Background())
		}
		logf.Close()
		return fmt.Errorf("cluster: start %s: %w", inc.identity, err)
	}
	if inc.output != nil {
		_ = inc.output.Started()
	}
	inc.cmd = cmd
	go func() {
		err := cmd.Wait()
		if inc.output != nil {
			// Drain what is left; a process it started that outlived it
			// (an orphaned command) may hold the pipe: bounded.
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			_ = inc.output.Close(ctx)
			cancel()
		}
		logf.Close()
		inc.release()
		inc.exitErr = err
		close(inc.exited)
	}()
	return nil
}

func (w *localWorker) waitReady(ctx context.Context, inc *incarnation) error {
	tick := time.NewTicker(25 * time.Millisecond)
	defer tick.Stop()
	for {
		st, err := w.status(ctx, inc, 500*time.Millisecond)
		if err == nil && st.Identity == inc.identity {
			return nil
		}
		if err == nil {
			// Another process answers on our port: ours lost the race for it.
			_ = inc.cmd.Process.Kill()
		}
		select {
		case <-inc.exited:
			return fmt.Errorf("%w: %s (%v); log:\n%s", errExitedBeforeReady, inc.identity, inc.exitErr, tail(inc.log, 4096))
		case <-ctx.Done():
			return fmt.Errorf("cluster: %s not answering /status on %s: %w; log:\n%s", inc.identity, inc.listen, ctx.Err(), tail(inc.log, 4096))
		case <-tick.C:
		}
	}
}

func (w *localWorker) Status(ctx context.Context) (Status, error) {
	inc, err := w.current()
	if err != nil {
		return Status{}, err
	}
	return w.status(ctx, inc, time.Second)
}

func (w *localWorker) status(ctx context.Context, inc *incarnation, timeout time.Duration) (Status, error) {
	var st Status
	body, err := w.get(ctx, inc, "/status", timeout)
	if err != nil {
		return st, err
	}
	if err := json.Unmarshal(body, &st); err != nil {
		return st, fmt.Errorf("cluster: %s /status: %w: %q", inc.identity, err, body)
	}
	return st, nil
}

// Probe GETs path on the current incarnation and returns the HTTP status and
// body, whatever the status.
func (w *localWorker) Probe(ctx context.Context, path string) (int, string, error) {
	inc, err := w.current()
	if err != nil {
		return 0, "", err
	}
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+inc.listen+path, nil)
	if err != nil {
		return 0, "", err
	}
	resp, err := w.httpc.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, string(body), err
}

func (w *localWorker) get(ctx context.Context, inc *incarnation, path string, timeout time.Duration) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+inc.listen+path, nil)
	if err != nil {
		return nil, err
	}
	resp, err := w.httpc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return body, fmt.Errorf("cluster: %s GET %s: %s", inc.identity, path, resp.Status)
	}
	return body, nil
}

// kill continues (if stopped) and SIGKILLs every incarnation still running,
// and waits for each to exit.
func (w *localWorker) kill() error {
	w.mu.Lock()
	all := append([]*incarnation(nil), w.all...)
	w.mu.Unlock()
	var errs []error
	for _, inc := range all {
		select {
		case <-inc.exited:
			continue
		default:
		}
		// A SIGSTOPped process still dies of SIGKILL, but SIGCONT first also
		// lets nothing linger in the stopped state if the kill is lost.
		_ = inc.cmd.Process.Signal(syscall.SIGCONT)
		_ = inc.cmd.Process.Kill()
		select {
		case <-inc.exited:
		case <-time.After(10 * time.Second):
			errs = append(errs, fmt.Errorf("cluster: %s (pid %d) did not exit after SIGKILL", inc.identity, inc.cmd.Process.Pid))
		}
	}
	return errors.Join(errs...)
}

// tail returns the last n bytes of a file, for failure messages.
func tail(path string, n int64) string {
	f, err := os.Open(path)
	if err != nil {
		return err.Error()
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err.Error()
	}
	off := max(fi.Size()-n, 0)
	b := make([]byte, fi.Size()-off)
	_, _ = f.ReadAt(b, off)
	return string(b)
}
