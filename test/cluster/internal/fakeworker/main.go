// Command fakeworker is a small stand-in for the blobleader worker, used only
// by the cluster package's own tests: it speaks the worker's flags, HTTP
// endpoints and history format and runs a plain lease election against real
// storage, so the cluster machinery can be tested apart from the real
// election. It is deliberately simple and not a reference for anything.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/lease"

	"github.com/blobleader/blobleader/worker/election"
)

var (
	connStr  = flag.String("connection-string", "", "")
	cont     = flag.String("container", "leases", "")
	blobName = flag.String("blob", "leader", "")
	identity = flag.String("identity", "fake", "")
	leaseDur = flag.Duration("lease-duration", 15*time.Second, "")
	deadline = flag.Duration("renew-deadline", 10*time.Second, "")
	renewInt = flag.Duration("renew-interval", 2*time.Second, "")
	retry    = flag.Duration("retry-period", time.Second, "")
	listen   = flag.String("listen", "127.0.0.1:0", "")
	history  = flag.String("history", "", "")
	unsafe   = flag.Bool("unsafe-no-step-down", false, "")
	_        = flag.Duration("tick", time.Second, "")
	_        = flag.Duration("shutdown-grace", time.Second, "")
	_        = flag.String("log-format", "json", "")
)

// fake is one fakeworker: its history, its storage clients, its election
// state and its storage operation counts.
type fake struct {
	start time.Time
	rt    time.Duration // request timeout
	hist  *os.File
	c     *container.Client
	b     *blockblob.Client
	lc    *lease.BlobClient

	mu    sync.Mutex
	ops   map[[2]string]int
	state struct {
		leading bool
		term    int64
		valid   time.Time // monotonic deadline
		since   time.Time
	}
}

func main() {
	flag.Parse()
	f, code, err := open()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(code)
	}
	go f.serve()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	for ctx.Err() == nil {
		if f.leading() {
			sleep(ctx, *renewInt)
			f.renew(ctx)
			continue
		}
		f.contend(ctx)
		sleep(ctx, *retry)
	}
	f.shutdown()
}

// open opens the history and the storage clients; on error, the exit code.
func open() (*fake, int, error) {
	f := &fake{start: time.Now(), ops: map[[2]string]int{}}
	var err error
	if f.hist, err = os.OpenFile(*history, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644); err != nil {
		return nil, 1, err
	}
	f.rt = election.Timing{RenewInterval: *renewInt, RenewDeadline: *deadline}.RequestTimeout()
	svc, err := azblob.NewClientFromConnectionString(*connStr, &azblob.ClientOptions{ClientOptions: policy.ClientOptions{
		Retry: policy.RetryOptions{MaxRetries: -1}}})
	if err != nil {
		return nil, 2, err
	}
	f.c = svc.ServiceClient().NewContainerClient(*cont)
	f.b = f.c.NewBlockBlobClient(*blobName)
	f.lc, _ = lease.NewBlobClient(f.b, nil)
	return f, 0, nil
}

// serve answers /status and /metrics as the worker does (the parts the
// cluster package reads).
func (f *fake) serve() {
	http.HandleFunc("/status", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		role := "follower"
		if f.state.leading && (*unsafe || time.Now().Before(f.state.valid)) {
			role = "leader"
		}
		st := map[string]any{"identity": *identity, "role": role, "term": f.state.term, "leaseDuration": leaseDur.String(), "since": f.state.since}
		f.mu.Unlock()
		json.NewEncoder(w).Encode(st)
	})
	http.HandleFunc("/metrics", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		for k, v := range f.ops {
			fmt.Fprintf(w, "blobleader_storage_requests_total{code=%q,op=%q} %d\n", k[1], k[0], v)
		}
	})
	http.ListenAndServe(*listen, nil)
}

func (f *fake) leading() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.state.leading
}

// call runs one storage operation under the request timeout and counts it.
func (f *fake) call(ctx context.Context, op string, do func(context.Context) error) error {
	cctx, cancel := context.WithTimeout(ctx, f.rt)
	defer cancel()
	err := do(cctx)
	code := "200"
	if err != nil {
		code = "error"
	}
	f.mu.Lock()
	f.ops[[2]string{op, code}]++
	f.mu.Unlock()
	return err
}

// contend is one follower poll: acquire, then stamp the next term under
// the lease; leading from the acquire's send + the renew deadline.
func (f *fake) contend(ctx context.Context) {
	sent := time.Now()
	err := f.call(ctx, "acquire", func(ctx context.Context) error {
		_, err := f.lc.AcquireLease(ctx, int32(leaseDur.Seconds()), nil)
		if bloberror.HasCode(err, bloberror.ContainerNotFound, bloberror.BlobNotFound) {
			f.c.Create(ctx, nil)
			f.b.UploadBuffer(ctx, nil, nil)
		}
		return err
	})
	if err != nil {
		return
	}
	term, err := f.stamp(ctx)
	if err != nil {
		return
	}
	f.mu.Lock()
	f.state.leading, f.state.term, f.state.valid, f.state.since = true, term, sent.Add(*deadline), time.Now()
	valid := f.state.valid
	f.mu.Unlock()
	f.event("started_leading", term, "", valid)
}

// stamp writes the fencing term, the metadata term + 1, under the lease.
func (f *fake) stamp(ctx context.Context) (term int64, err error) {
	err = f.call(ctx, "metadata", func(ctx context.Context) error {
		props, err := f.b.GetProperties(ctx, nil)
		if err != nil {
			return err
		}
		if v := props.Metadata["term"]; v != nil {
			fmt.Sscan(*v, &term)
		} else if v := props.Metadata["Term"]; v != nil {
			fmt.Sscan(*v, &term)
		}
		term++
		t := fmt.Sprint(term)
		_, err = f.b.SetMetadata(ctx, map[string]*string{"term": &t, "holder": identity},
			&blob.SetMetadataOptions{AccessConditions: &blob.AccessConditions{LeaseAccessConditions: &blob.LeaseAccessConditions{LeaseID: f.lc.LeaseID()}}})
		return err
	})
	return term, err
}

// renew is one leader renew: a success moves the deadline; a definite loss,
// or a failure past the deadline, ends the leadership (never with
// --unsafe-no-step-down).
func (f *fake) renew(ctx context.Context) {
	sent := time.Now()
	err := f.call(ctx, "renew", func(ctx context.Context) error { _, err := f.lc.RenewLease(ctx, nil); return err })
	f.mu.Lock()
	term := f.state.term
	if err == nil {
		f.state.valid = sent.Add(*deadline)
	}
	lost := err != nil && (time.Now().After(f.state.valid) || bloberror.HasCode(err, bloberror.LeaseIDMismatchWithLeaseOperation, bloberror.LeaseIsBrokenAndCannotBeRenewed))
	valid := f.state.valid
	if lost && !*unsafe {
		f.state.leading = false
	}
	f.mu.Unlock()
	switch {
	case err == nil:
		f.event("renewed", term, "", valid)
	case lost && !*unsafe:
		f.event("stopped_leading", term, "lost: "+err.Error(), valid)
	default:
		f.event("renew_failed", term, err.Error(), time.Time{})
	}
}

// shutdown steps down and releases, as the worker does on SIGTERM.
func (f *fake) shutdown() {
	f.mu.Lock()
	leading, term, valid := f.state.leading, f.state.term, f.state.valid
	f.mu.Unlock()
	if !leading {
		return
	}
	f.event("stopped_leading", term, "shutdown", valid)
	rctx, cancel := context.WithTimeout(context.Background(), f.rt)
	_, err := f.lc.ReleaseLease(rctx, nil)
	cancel()
	if err == nil {
		f.event("released", term, "", time.Time{})
	}
}

// event appends one history record.
func (f *fake) event(ev string, term int64, reason string, valid time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	m := map[string]any{"t": time.Now().UTC().Format(time.RFC3339Nano), "mono_ns": time.Since(f.start).Nanoseconds(),
		"identity": *identity, "event": ev}
	if term != 0 {
		m["term"] = term
	}
	if reason != "" {
		m["reason"] = reason
	}
	if !valid.IsZero() && !*unsafe {
		m["valid_until"] = valid.UTC().Format(time.RFC3339Nano)
	}
	b, _ := json.Marshal(m)
	f.hist.Write(append(b, '\n'))
}

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}
