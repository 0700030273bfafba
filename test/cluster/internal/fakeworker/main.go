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

var (
	start = time.Now()
	mu    sync.Mutex
	hist  *os.File
	ops   = map[[2]string]int{}
	state struct {
		leading bool
		term    int64
		valid   time.Time // monotonic deadline
		since   time.Time
	}
)

func event(ev string, term int64, reason string, valid time.Time) {
	mu.Lock()
	defer mu.Unlock()
	m := map[string]any{"t": time.Now().UTC().Format(time.RFC3339Nano), "mono_ns": time.Since(start).Nanoseconds(),
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
	hist.Write(append(b, '\n'))
}

func count(op string, err error) {
	code := "200"
	if err != nil {
		code = "error"
	}
	mu.Lock()
	ops[[2]string{op, code}]++
	mu.Unlock()
}

func main() {
	flag.Parse()
	var err error
	if hist, err = os.OpenFile(*history, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	rt := election.Timing{RenewInterval: *renewInt, RenewDeadline: *deadline}.RequestTimeout()
	svc, err := azblob.NewClientFromConnectionString(*connStr, &azblob.ClientOptions{ClientOptions: policy.ClientOptions{
		Retry: policy.RetryOptions{MaxRetries: -1}}})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	c := svc.ServiceClient().NewContainerClient(*cont)
	b := c.NewBlockBlobClient(*blobName)
	lc, _ := lease.NewBlobClient(b, nil)

	http.HandleFunc("/status", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		role := "follower"
		if state.leading && (*unsafe || time.Now().Before(state.valid)) {
			role = "leader"
		}
		st := map[string]any{"identity": *identity, "role": role, "term": state.term, "leaseDuration": leaseDur.String(), "since": state.since}
		mu.Unlock()
		json.NewEncoder(w).Encode(st)
	})
	http.HandleFunc("/metrics", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		for k, v := range ops {
			fmt.Fprintf(w, "blobleader_storage_requests_total{code=%q,op=%q} %d\n", k[1], k[0], v)
		}
	})
	go http.ListenAndServe(*listen, nil)

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	call := func(op string, f func(context.Context) error) error {
		cctx, cancel := context.WithTimeout(ctx, rt)
		defer cancel()
		err := f(cctx)
		count(op, err)
		return err
	}
	for ctx.Err() == nil {
		mu.Lock()
		leading := state.leading
		mu.Unlock()
		if !leading {
			sent := time.Now()
			err := call("acquire", func(ctx context.Context) error {
				_, err := lc.AcquireLease(ctx, int32(leaseDur.Seconds()), nil)
				if bloberror.HasCode(err, bloberror.ContainerNotFound, bloberror.BlobNotFound) {
					c.Create(ctx, nil)
					b.UploadBuffer(ctx, nil, nil)
				}
				return err
			})
			var term int64
			if err == nil {
				// Fencing term: metadata term+1, written under the lease.
				err = call("metadata", func(ctx context.Context) error {
					props, err := b.GetProperties(ctx, nil)
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
					_, err = b.SetMetadata(ctx, map[string]*string{"term": &t, "holder": identity},
						&blob.SetMetadataOptions{AccessConditions: &blob.AccessConditions{LeaseAccessConditions: &blob.LeaseAccessConditions{LeaseID: lc.LeaseID()}}})
					return err
				})
			}
			if err == nil {
				mu.Lock()
				state.leading, state.term, state.valid, state.since = true, term, sent.Add(*deadline), time.Now()
				term, valid := state.term, state.valid
				mu.Unlock()
				event("started_leading", term, "", valid)
			}
			sleep(ctx, *retry)
			continue
		}
		sleep(ctx, *renewInt)
		sent := time.Now()
		err := call("renew", func(ctx context.Context) error { _, err := lc.RenewLease(ctx, nil); return err })
		mu.Lock()
		term := state.term
		if err == nil {
			state.valid = sent.Add(*deadline)
		}
		lost := err != nil && (time.Now().After(state.valid) || bloberror.HasCode(err, bloberror.LeaseIDMismatchWithLeaseOperation, bloberror.LeaseIsBrokenAndCannotBeRenewed))
		valid := state.valid
		if lost && !*unsafe {
			state.leading = false
		}
		mu.Unlock()
		switch {
		case err == nil:
			event("renewed", term, "", valid)
		case lost && !*unsafe:
			event("stopped_leading", term, "lost: "+err.Error(), valid)
		default:
			event("renew_failed", term, err.Error(), time.Time{})
		}
	}
	mu.Lock()
	leading, term, valid := state.leading, state.term, state.valid
	mu.Unlock()
	if leading {
		event("stopped_leading", term, "shutdown", valid)
		rctx, cancel := context.WithTimeout(context.Background(), rt)
		_, err := lc.ReleaseLease(rctx, nil)
		cancel()
		if err == nil {
			event("released", term, "", time.Time{})
		}
	}
}

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}
