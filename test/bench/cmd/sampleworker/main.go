// Command sampleworker is a bench-only baseline: the leader-election loop of
// the Azure Architecture Center's Leader Election sample
// (mspnp/cloud-design-patterns, leader-election/DistributedMutex:
// BlobDistributedMutex and BlobLeaseManager) rewritten in Go over this
// repository's blob lease lock, so that the benchmark can run the sample's
// parameter set (lease 15 s, renew every 10 s, acquire retry every 20 s) in
// the same cluster, under the same faults and checker as the real worker.
//
// Our worker refuses those parameters (renew interval ≤ D/3 and D < L − 2 s),
// and the sample's algorithm differs anyway. What it does, as the sample does:
//
//  1. Try to acquire the lease for L. On any failure, sleep the acquire
//     interval (--retry-period, no jitter) and try again.
//  2. On success, lead at once and renew immediately, then every renew
//     interval counted from the send of the previous renew. There is no renew
//     deadline: it believes it leads until a renew fails, and then goes
//     straight back to step 1 without sleeping.
//  3. On SIGTERM/SIGINT, stop leading and release the lease.
//
// Differences, all neutral without faults: storage calls go through bloblock
// (SDK retries off, a 5 s per-request timeout) where the sample uses the .NET
// SDK's retry policy (3 retries, 5 s apart); there is no leader task.
//
// For the harness it speaks the worker's contracts: the same flags (the
// election ones it does not use are accepted and ignored), GET /status,
// /metrics (blobleader_storage_requests_total and friends), /healthz, /readyz,
// and the JSONL history. Its history marks each leadership with a label in the
// term field (milliseconds since the epoch at acquisition; the sample has no
// fencing term, nothing in storage checks it) and writes valid_until = renew
// send + L (when storage would expire the lease; the sample itself checks
// nothing), so run it with --renew-deadline equal to --lease-duration in the
// checker's parameters.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/blobleader/blobleader/worker/election"
	"github.com/blobleader/blobleader/worker/election/bloblock"
	"github.com/blobleader/blobleader/worker/election/lease"
	"github.com/blobleader/blobleader/worker/history"
)

var processStart = time.Now()

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintf(os.Stderr, "sampleworker: %v\n", err)
		var ue usageError
		if errors.As(err, &ue) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}

type usageError struct{ error }

type options struct {
	connectionString, container, blob, identity, listen, historyPath string
	lease, renewEvery, acquireEvery, requestTimeout                  time.Duration
}

func parse(args []string) (options, error) {
	var o options
	fs := flag.NewFlagSet("sampleworker", flag.ContinueOnError)
	fs.StringVar(&o.connectionString, "connection-string", os.Getenv("AZURE_STORAGE_CONNECTION_STRING"), "storage connection string")
	fs.StringVar(&o.container, "container", "leases", "container of the lock blob")
	fs.StringVar(&o.blob, "blob", "leader", "lock blob")
	host, _ := os.Hostname()
	fs.StringVar(&o.identity, "identity", fmt.Sprintf("%s-%d", host, os.Getpid()), "this contender's name")
	fs.DurationVar(&o.lease, "lease-duration", 15*time.Second, "lease requested on acquire (the sample: 15s)")
	fs.DurationVar(&o.renewEvery, "renew-interval", 10*time.Second, "renew period while leading (the sample: 10s)")
	fs.DurationVar(&o.acquireEvery, "retry-period", 20*time.Second, "sleep after a failed acquire (the sample: 20s)")
	fs.DurationVar(&o.requestTimeout, "request-timeout", 5*time.Second, "deadline of each storage call")
	fs.StringVar(&o.listen, "listen", ":8080", "HTTP address")
	fs.StringVar(&o.historyPath, "history", "", "JSONL history file")
	// Accepted for the harness, unused by the sample's algorithm.
	fs.Duration("renew-deadline", 0, "ignored: the sample has no renew deadline")
	fs.Duration("tick", 0, "ignored: no leader task")
	fs.Duration("shutdown-grace", 0, "ignored")
	fs.Duration("watchdog-timeout", 0, "ignored")
	fs.String("log-format", "json", "ignored: logs are JSON")
	if err := fs.Parse(args); err != nil {
		return o, usageError{err}
	}
	switch {
	case o.connectionString == "":
		return o, usageError{errors.New("--connection-string is required")}
	case o.lease < election.MinLeaseDuration || o.lease > election.MaxLeaseDuration:
		return o, usageError{fmt.Errorf("--lease-duration must be 15s–60s, got %v", o.lease)}
	case o.renewEvery <= 0 || o.acquireEvery <= 0 || o.requestTimeout <= 0:
		return o, usageError{errors.New("--renew-interval, --retry-period and --request-timeout must be > 0")}
	}
	return o, nil
}

// state is what /status reports.
type state struct {
	mu     sync.Mutex
	role   string
	term   int64
	since  time.Time
	leader bool
}

func (s *state) set(role string, term int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.role, s.term, s.since, s.leader = role, term, time.Now(), role == "leader"
}

type sample struct {
	o    options
	lock *bloblock.Lock
	// leaseID of the current acquire attempt: the sample lets storage pick a
	// new lease ID on every acquire, so a new one each attempt is its shape.
	leaseID string
	st      *state
	log     *slog.Logger
	emitMu  sync.Mutex
	hist    *history.File
}

func (s *sample) emit(ev election.Event) {
	if s.hist == nil {
		return
	}
	s.emitMu.Lock()
	defer s.emitMu.Unlock()
	if err := s.hist.Write(history.NewRecord(s.o.identity, processStart, ev)); err != nil {
		s.log.Error("history", "err", err)
	}
}

func (s *sample) call(ctx context.Context, f func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, s.o.requestTimeout)
	defer cancel()
	return f(ctx)
}

// loop is BlobDistributedMutex.RunTaskWhenMutexAcquired.
func (s *sample) loop(ctx context.Context) {
	sawHeld := false // the last acquire found the lease held (logged once per run of them)
	for ctx.Err() == nil {
		// 1. TryAcquireLeaseOrWait.
		sent := time.Now()
		s.leaseID = uuid.NewString()
		err := s.call(ctx, func(c context.Context) error { return s.lock.Acquire(c, s.leaseID, s.o.lease) })
		if err != nil {
			switch {
			case !errors.Is(err, lease.ErrHeld):
				s.emit(election.Event{Kind: election.EventAcquireFailed, Time: time.Now(), Reason: err.Error()})
				sawHeld = false
			case !sawHeld:
				// A follower's evidence that it contends (the checker fails a
				// worker that left no history). The sample does not read who
				// holds the lease, so the leader is left empty, and no extra
				// storage call changes its cost.
				s.emit(election.Event{Kind: election.EventObservedLeader, Time: time.Now()})
				sawHeld = true
			}
			select {
			case <-ctx.Done():
			case <-time.After(s.o.acquireEvery):
			}
			continue
		}
		sawHeld = false
		// 2. Lead and KeepRenewingLease.
		term := sent.UnixMilli()
		s.st.set("leader", term)
		s.emit(election.Event{Kind: election.EventStartedLeading, Time: time.Now(), Term: term, ValidUntil: sent.Add(s.o.lease)})
		s.log.Info("started leading", "term", term)
		if stopped := s.lead(ctx, term); stopped {
			return
		}
	}
}

// lead renews until a renew fails (returns false) or ctx ends (releases,
// returns true).
func (s *sample) lead(ctx context.Context, term int64) bool {
	for {
		sent := time.Now()
		err := s.call(ctx, func(c context.Context) error { return s.lock.Renew(c, s.leaseID) })
		if ctx.Err() != nil {
			s.stop(term)
			return true
		}
		if err != nil {
			s.emit(election.Event{Kind: election.EventRenewFailed, Time: time.Now(), Term: term, Reason: err.Error()})
			s.st.set("follower", term)
			s.emit(election.Event{Kind: election.EventStoppedLeading, Time: time.Now(), Term: term, Reason: "renew failed: " + err.Error()})
			return false
		}
		s.emit(election.Event{Kind: election.EventRenewed, Time: time.Now(), Term: term, ValidUntil: sent.Add(s.o.lease)})
		select {
		case <-ctx.Done():
			s.stop(term)
			return true
		case <-time.After(s.o.renewEvery - time.Since(sent)):
		}
	}
}

// stop is the sample's cancellation path: the renew loop releases the lease.
func (s *sample) stop(term int64) {
	s.st.set("stopping", term)
	s.emit(election.Event{Kind: election.EventStoppedLeading, Time: time.Now(), Term: term, Reason: "shutdown"})
	if err := s.call(context.Background(), func(c context.Context) error { return s.lock.Release(c, s.leaseID) }); err != nil {
		s.log.Error("release", "err", err)
		return
	}
	s.emit(election.Event{Kind: election.EventReleased, Time: time.Now(), Term: term})
}

func run(args []string) error {
	o, err := parse(args)
	if err != nil {
		return err
	}
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil)).With("identity", o.identity)
	ln, err := net.Listen("tcp", o.listen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", o.listen, err)
	}
	defer ln.Close()

	st := &state{role: "follower", since: time.Now()}
	reg := prometheus.NewRegistry()
	requests := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "blobleader_storage_requests_total", Help: "Storage requests by operation and outcome.",
	}, []string{"op", "code"})
	durations := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "blobleader_storage_request_duration_seconds", Help: "Storage request latency by operation.",
		Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5},
	}, []string{"op"})
	isLeader := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "blobleader_is_leader", Help: "1 while the sample believes it leads.",
	}, func() float64 {
		st.mu.Lock()
		defer st.mu.Unlock()
		if st.leader {
			return 1
		}
		return 0
	})
	reg.MustRegister(requests, durations, isLeader)

	c, err := bloblock.NewContainerClient(bloblock.ClientConfig{
		ConnectionString: o.connectionString, Container: o.container, RequestTimeout: o.requestTimeout,
		Observe: func(op, code string, took time.Duration) {
			requests.WithLabelValues(op, code).Inc()
			durations.WithLabelValues(op).Observe(took.Seconds())
		},
	})
	if err != nil {
		return err
	}
	lock, err := bloblock.New(c, o.blob)
	if err != nil {
		return err
	}
	s := &sample{o: o, lock: lock, st: st, log: log}
	if o.historyPath != "" {
		if s.hist, err = history.OpenFile(o.historyPath); err != nil {
			return err
		}
		defer s.hist.Close()
	}

	mux := http.NewServeMux()
	ok := func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok\n") }
	mux.HandleFunc("GET /healthz", ok)
	mux.HandleFunc("GET /readyz", ok)
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /status", func(w http.ResponseWriter, _ *http.Request) {
		st.mu.Lock()
		doc := map[string]any{
			"identity": o.identity, "role": st.role, "term": st.term, "leader": "",
			"leaseDuration": o.lease.String(), "since": st.since.UTC().Format(time.RFC3339Nano),
		}
		if st.leader {
			doc["leader"] = o.identity
		}
		st.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(doc)
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	log.Info("sample baseline started", "lease", o.lease, "renew_every", o.renewEvery, "acquire_every", o.acquireEvery)
	s.loop(ctx)
	shutdown, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = srv.Shutdown(shutdown)
	return nil
}
