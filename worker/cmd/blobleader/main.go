// Command blobleader is one contender in a leader election on an Azure Blob
// Storage lease. The leader runs the reference task (a fenced ledger append
// every --tick); the others follow and take over when it goes. See --help and
// docs/architecture.md.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/blobleader/blobleader/worker/dialer"
	"github.com/blobleader/blobleader/worker/election"
	"github.com/blobleader/blobleader/worker/election/bloblock"
	"github.com/blobleader/blobleader/worker/history"
	"github.com/blobleader/blobleader/worker/status"
)

// processStart anchors mono_ns in the history.
var processStart = time.Now()

func main() {
	os.Exit(run(argsFor(os.Args[0], os.Args[1:]), os.Stdout, os.Stderr))
}

// run is main without os.Exit, returning the exit code: 0 clean stop,
// 2 invalid configuration, 1 anything else.
func run(args []string, stdout, stderr io.Writer) int {
	var err error
	switch {
	case len(args) > 0 && args[0] == "ledger":
		err = runLedger(args[1:], stdout, stderr)
	case len(args) > 0 && args[0] == "status":
		err = runStatus(args[1:], stdout)
	case len(args) > 0 && args[0] == "shards":
		err = runShards(args[1:], stdout, stderr)
	default:
		err = runWorker(args, stdout, stderr)
	}
	var ue *usageError
	switch {
	case err == nil || errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "blobleader: %v\n", err)
		return 2
	default:
		fmt.Fprintf(stderr, "blobleader: %v\n", err)
		return 1
	}
}

func newLogger(format string, w io.Writer) *slog.Logger {
	if format == "auto" {
		format = "json"
		if f, ok := w.(*os.File); ok {
			if fi, err := f.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
				format = "text"
			}
		}
	}
	if format == "text" {
		return slog.New(slog.NewTextHandler(w, nil))
	}
	return slog.New(slog.NewJSONHandler(w, nil))
}

func newContainerClient(s storageOptions, requestTimeout time.Duration, observe bloblock.ObserveFunc) (*container.Client, error) {
	cfg := bloblock.ClientConfig{
		ConnectionString: s.connectionString, AccountURL: s.accountURL, Container: s.container,
		RequestTimeout: requestTimeout, Observe: observe,
	}
	if s.storageDial != "" {
		hc, err := dialer.Client(s.storageDial, nil)
		if err != nil {
			return nil, usagef("invalid --storage-dial %q: %v", s.storageDial, err)
		}
		cfg.Transport = hc
	}
	return bloblock.NewContainerClient(cfg)
}

func runWorker(args []string, stdout, stderr io.Writer) error {
	o, err := parseOptions(args, stdout)
	if err != nil {
		return err
	}
	historyFile, err := openHistoryFile(o.history)
	if err != nil {
		return err
	}
	if historyFile != nil {
		defer historyFile.Close()
	}
	base := newLogger(o.logFormat, stderr)
	log := base.With("identity", o.identity)
	cfg := o.electionConfig()
	cfg.Logger = base // the elector adds identity itself
	if o.unsafe {
		log.Warn("UNSAFE: --unsafe-no-step-down is set; this worker keeps claiming leadership after losing it (negative control only)")
	}

	// Listen first, so a taken port fails before we contend.
	ln, err := net.Listen("tcp", o.listen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", o.listen, err)
	}
	defer ln.Close()

	var elector *election.Elector
	metrics := status.NewMetrics(func() *election.Elector { return elector })
	c, err := newContainerClient(o.storageOptions, cfg.RequestTimeout(), metrics.ObserveRequest)
	if err != nil {
		return err
	}
	lock, err := bloblock.New(c, o.blob)
	if err != nil {
		return err
	}

	var hist interface{ Write(history.Record) error }
	switch o.history {
	case "":
	case "blob":
		hc, err := newContainerClient(storageOptions{connectionString: o.connectionString, accountURL: o.accountURL, container: history.Container},
			time.Second, metrics.ObserveRequest)
		if err != nil {
			return err
		}
		b := history.OpenBlob(hc, o.identity, processStart, history.BlobOptions{Logger: log})
		hist = b
		defer func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := b.Close(ctx); err != nil {
				log.Error("history", "err", err)
			}
		}()
	default:
		hist = historyFile
	}
	record := func(r history.Record) {
		if hist != nil {
			if err := hist.Write(r); err != nil {
				log.Error("history write failed", "err", err)
			}
		}
	}
	onEvent := func(ev election.Event) {
		metrics.ObserveEvent(ev)
		record(history.NewRecord(o.identity, processStart, ev))
	}
	task := &ledgerTask{c: c, blob: o.blob, identity: o.identity, tick: o.tick, requestTimeout: cfg.RequestTimeout(), unsafe: o.unsafe, log: log}
	leaderTask := task.run
	var shards *shardMode // nil in single-task mode
	if o.shards > 0 {
		if shards, err = newShardMode(o, c, cfg, log, record); err != nil {
			return err
		}
		leaderTask = shards.lead(func() bool { return elector.IsLeader() })
	}
	elector, err = election.NewElector(cfg, lock, election.Callbacks{
		OnStartedLeading: leaderTask,
		OnNewLeader: func(id string, term int64) {
			log.Info("leader", "leader", id, "term", term)
		},
		OnEvent: onEvent,
	})
	if err != nil {
		return usagef("%v", err)
	}
	task.isLeader = elector.IsLeader

	handler := status.Handler(elector, metrics)
	if shards != nil {
		handler = shards.handler(elector, handler)
	}
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 5 * time.Second}
	srvErr := make(chan error, 1)
	go func() { srvErr <- srv.Serve(ln) }()
	log.Info("worker started", "listen", ln.Addr().String(), "lock", lock.Describe(),
		"lease", cfg.LeaseDuration, "renew_deadline", cfg.RenewDeadline, "renew_interval", cfg.RenewInterval,
		"retry_period", cfg.RetryPeriod, "request_timeout", cfg.RequestTimeout())

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	closeControl, err := startControl(o.controlListen, log) // after NotifyContext: a control stop is a SIGTERM
	if err != nil {
		return err
	}
	defer closeControl()
	runErr := make(chan error, 1)
	go func() { runErr <- runElection(ctx, elector, shards) }()

	select {
	case err = <-runErr:
	case err = <-srvErr:
		stop()
		<-runErr
		err = fmt.Errorf("http server: %w", err)
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = srv.Shutdown(shutdownCtx)
	if err == nil {
		log.Info("stopped cleanly")
	}
	return err
}
