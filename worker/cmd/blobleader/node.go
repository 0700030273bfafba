package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/blobleader/blobleader/worker/boundedlog"
	"github.com/blobleader/blobleader/worker/dialer"
	"github.com/blobleader/blobleader/worker/election"
	"github.com/blobleader/blobleader/worker/election/bloblock"
	"github.com/blobleader/blobleader/worker/history"
	"github.com/blobleader/blobleader/worker/status"
)

// node is one contender, as every contending mode (the worker, `run`)
// builds it in client-go's order: the configuration (the mode's options),
// what the election needs (logs, history, listeners, metrics, the storage
// client and the lock), the mode's work on it, then the elector. openNode
// builds it and runs nothing; run runs it.
type node struct {
	o          *options
	cfg        election.Config // the mode's (workerOptions, runOptions), with the node's logger
	base       *slog.Logger    // without the identity (the elector adds it)
	log        *slog.Logger
	ln         net.Listener
	control    net.Listener // --control-listen, nil when off
	metrics    *status.Metrics
	storage    *container.Client
	cred       azcore.TokenCredential // --account-url: shared by every client, warmed up before the election
	lock       *bloblock.Lock
	hist       history.Writer    // nil: no --history; a *history.Queue or *history.Blob
	elector    *election.Elector // built last, over lock, with the mode's callbacks
	companions []companion       // the mode's, beside the election
	closers    []func()          // run by close, last first
	sinks      []func()          // flush the log and history sinks (bounded); also closers
}

// A mode is what a contending mode runs on its node, built on the node's
// storage, logs, history and metrics before the elector: the elector's
// callbacks (the leader task, an event observer) and the companions that
// run beside the election.
type mode struct {
	callbacks  election.Callbacks
	companions []companion
}

// A companion runs beside the election for as long as it does (the --shards
// pool member) and extends the contract's HTTP handler.
type companion interface {
	// handler wraps base, the contract's handler for e.
	handler(e *election.Elector, base http.Handler) http.Handler
	// run works until ctx ends.
	run(ctx context.Context) error
	// healthy is the companion's part of /healthz (nil: healthy); it joins
	// the elector's in /healthz, blobleader_healthy and the status log line.
	healthy() error
}

// A conflictReporter is a companion with its own part of
// blobleader_setup_conflict: how its set-up conflicts with another's (""
// when it does not).
type conflictReporter interface {
	conflict() string
}

// openNode builds a node for the options o and the mode's election config
// cfg: it opens what the election needs, listening first so that a taken
// port fails before we contend, builds the mode on it (buildMode), then the
// elector. Every failure is a usage error naming the flag it comes from
// (exit 2), and whatever was opened is closed again.
func openNode(o *options, cfg election.Config, stderr io.Writer, buildMode func(*node) (mode, error)) (*node, error) {
	historyFile, err := openHistoryFile(o.history) // before listening or touching storage
	if err != nil {
		return nil, err
	}
	// Nothing on the safety path waits on a log or history write: both go
	// through bounded queues that drop and count (docs/architecture.md#logs).
	// The log sink closes last, so the other closers can still log.
	logs := boundedlog.New(newLogger(o.logFormat, stderr).Handler(), boundedlog.Options{})
	base := slog.New(logs.Handler())
	n := &node{o: o, cfg: cfg, base: base, log: base.With("identity", o.identity)}
	n.addSink(func() { n.flush("logs", logs.Close) })
	n.cfg.Logger = base // the elector adds identity itself
	// The leader confirms its record, so a lease held outside the election
	// is told from a leader (docs/architecture.md#conflicting-set-ups).
	n.cfg.ConfirmEvery = n.cfg.LeaseDuration / 2
	if historyFile != nil {
		n.queueHistory(historyFile)
	}
	// The metrics read the elector when scraped. They exist before the
	// storage client, which counts its requests into them, and so before
	// the elector built over it; nothing is scraped before run.
	n.metrics = status.NewMetrics(func() *election.Elector { return n.elector })
	n.metrics.CountDrops(logs.Dropped, n.historyDropped)
	if err := n.open(); err != nil {
		n.close()
		return nil, err
	}
	if err := n.elect(buildMode); err != nil {
		n.close()
		return nil, err
	}
	return n, nil
}

// open listens (--listen, --control-listen) and builds the credential, the
// storage client, the lock and the --history blob sink, appending a closer
// for each as it goes.
func (n *node) open() error {
	o := n.o
	o.build.announce(n.log)
	logUnknownEnv(n.log)
	if o.listen != "" { // "": no listener (a one-shot lock not asked to listen)
		ln, err := net.Listen("tcp", o.listen)
		if err != nil {
			return usagef("cannot listen on %s %s: %v", flagRef("listen"), o.listen, causeOf(err))
		}
		n.ln = ln
		n.closers = append(n.closers, func() { ln.Close() })
	}
	var err error
	if n.control, err = listenControl(o.controlListen); err != nil {
		return err
	}
	if n.control != nil {
		n.closers = append(n.closers, func() { n.control.Close() })
	}
	if o.accountURL != "" {
		if n.cred, err = bloblock.NewCredential(); err != nil {
			return usagef("cannot authenticate for %s %s: %v", flagRef("account-url"), o.accountURL, err)
		}
	}
	if n.storage, err = newContainerClient(o.storageOptions, n.cred, n.cfg.RequestTimeout(), n.observeRequest); err != nil {
		return storageUsage(err)
	}
	open := o.openLock
	if open == nil {
		open = func(c *container.Client) (*bloblock.Lock, error) { return bloblock.New(c, o.blob) }
	}
	if n.lock, err = open(n.storage); err != nil {
		return usagef("invalid %s %q: %v", flagRef("blob"), o.blob, err)
	}
	if o.history == "blob" {
		return n.appendHistoryBlobs()
	}
	return nil
}

// elect builds the mode on the opened node, then the elector over its lock
// with the mode's callbacks. Every event goes to the metrics and the
// history, then to the mode's observer; our own leadership changes are
// logged as the alert lines (alertlog.go).
func (n *node) elect(buildMode func(*node) (mode, error)) error {
	m, err := buildMode(n)
	if err != nil {
		return err
	}
	cb := m.callbacks
	observe := cb.OnEvent
	cb.OnEvent = func(ev election.Event) {
		n.metrics.ObserveEvent(ev)
		n.write(history.NewRecord(n.o.identity, processStart, ev))
		n.logLeadership(ev)
		if observe != nil {
			observe(ev)
		}
	}
	// Each leadership change is one line: ours are the alert lines
	// (logLeadership), a new leader seen is the elector's "observed leader".
	cfg := n.cfg
	cfg.Logger = slog.New(withoutLeadershipLines{cfg.Logger.Handler()})
	e, err := election.NewElector(cfg, n.lock, cb)
	if err != nil {
		return usagef("%v", err)
	}
	n.elector, n.companions = e, m.companions
	n.metrics.Registry.MustRegister(status.NewHealthGauge(n.health), status.NewReadyGauge(n.ready), status.NewConflictGauge(n.conflict))
	return nil
}

// newContainerClient builds a client for s; cred (nil: the client makes its
// own) is the account URL's credential, shared so one warm-up serves all.
func newContainerClient(s storageOptions, cred azcore.TokenCredential, requestTimeout time.Duration, observe bloblock.ObserveFunc) (*container.Client, error) {
	cfg := bloblock.ClientConfig{
		ConnectionString: s.connectionString, AccountURL: s.accountURL, Credential: cred, Container: s.container,
		RequestTimeout: requestTimeout, Observe: observe,
	}
	if s.storageDial != "" {
		hc, err := dialer.Client(s.storageDial, nil)
		if err != nil {
			return nil, usagef("invalid %s %q: %v", flagRef("storage-dial"), s.storageDial, err)
		}
		cfg.Transport = hc
	}
	return bloblock.NewContainerClient(cfg)
}

// newLogger is the log handler on stderr for --log-format.
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
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{ReplaceAttr: durationString}))
}

// durationString writes a duration as the text handler does, Go's
// duration string ("15s"), where JSON would write integer nanoseconds: one
// form in every log line (docs/architecture.md#logs).
func durationString(_ []string, a slog.Attr) slog.Attr {
	if a.Value.Kind() == slog.KindDuration {
		a.Value = slog.StringValue(a.Value.Duration().String())
	}
	return a
}

// storageUsage names the storage flag a client could not be built from.
func storageUsage(err error) error {
	var ue *usageError
	if errors.As(err, &ue) {
		return err
	}
	return usagef("invalid storage flags (%s or %s, %s): %v", flagRef("connection-string"), flagRef("account-url"), flagRef("container"), err)
}

// causeOf is the operating system's reason for a failed listen or dial
// ("address already in use"), without the address repeated.
func causeOf(err error) error {
	var oe *net.OpError
	if errors.As(err, &oe) && oe.Err != nil {
		var se *os.SyscallError
		if errors.As(oe.Err, &se) {
			return se.Err
		}
		return oe.Err
	}
	return err
}

// addSink registers the flush of a log or history sink: a closer, and one
// exitUnreleased runs.
func (n *node) addSink(flush func()) {
	n.closers = append(n.closers, flush)
	n.sinks = append(n.sinks, flush)
}

// exitUnreleased ends the process with code at once, releasing nothing (the
// lease expires on its own), once the history and then the logs are
// flushed, each within exitFlush: the line that explains such an exit must
// reach its sink before it. Nothing else is closed: a listener closed
// early would end the election, which might release.
func (n *node) exitUnreleased(code int) {
	for i := len(n.sinks) - 1; i >= 0; i-- {
		n.sinks[i]()
	}
	osExit(code)
}

// osExit is os.Exit (a test sees what was written by the time it is called).
var osExit = os.Exit

// close releases what openNode opened, last first.
func (n *node) close() {
	for i := len(n.closers) - 1; i >= 0; i-- {
		n.closers[i]()
	}
	n.closers = nil
}

// exitFlush bounds how long close waits for a queued log or history to be
// written: a blocked output must not keep a stopping process alive.
const exitFlush = 2 * time.Second

// flush closes one queued output within exitFlush and says whether it was
// drained; what could not be written is reported (on stderr, best effort).
func (n *node) flush(what string, close func(context.Context) error) bool {
	ctx, cancel := context.WithTimeout(context.Background(), exitFlush)
	defer cancel()
	if err := close(ctx); err != nil {
		n.log.Error("flush at exit", "output", what, "err", err)
		return false
	}
	return true
}

// run serves the HTTP endpoints (and --control-listen) and runs the
// election, with each companion beside it, until ctx ends (or the HTTP
// server fails), then shuts the server down. ctx must already end on
// SIGTERM: a control stop is a SIGTERM to ourselves.
func (n *node) run(ctx context.Context) error {
	defer serveControl(n.control, n.log)()
	srv := &http.Server{Handler: n.handler(), ReadHeaderTimeout: 5 * time.Second}
	srvErr := make(chan error, 1)
	listen := ""
	if n.ln != nil {
		go func() { srvErr <- srv.Serve(n.ln) }()
		listen = n.ln.Addr().String()
	}
	cfg := n.cfg
	n.log.Info("worker started", "listen", listen, "lock", n.lock.Describe(),
		"lease", cfg.LeaseDuration, "renew_deadline", cfg.RenewDeadline, "renew_interval", cfg.RenewInterval,
		"retry_period", cfg.RetryPeriod, "request_timeout", cfg.RequestTimeout(), "takeover_after", cfg.TakeoverAfter, "profile", n.o.profile)

	ctx, stop := context.WithCancel(ctx)
	defer stop()
	runErr := make(chan error, 1)
	go func() { runErr <- n.contend(ctx) }()
	statusDone := make(chan struct{})
	go func() { defer close(statusDone); n.logStatus(ctx) }()
	defer func() { stop(); <-statusDone }()

	var err error
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
		n.log.Info("stopped cleanly")
	}
	return err
}

// contend runs the election and the companions beside it until ctx ends;
// all stop gracefully (tasks stopped, leases released).
func (n *node) contend(ctx context.Context) error {
	// The first token, under its own budget, before the first storage
	// request: see bloblock.WarmUp. /healthz answers meanwhile.
	if n.cred != nil {
		if _, err := bloblock.WarmUp(ctx, n.cred, n.o.tokenTimeout, n.log); err != nil {
			if ctx.Err() != nil {
				return nil // stopped while waiting: a clean stop
			}
			return err
		}
	}
	// Any one ending ends all: a pool member without its election (or an
	// election whose pool member failed) must not run on alone.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make(chan error, len(n.companions))
	for _, c := range n.companions {
		go func() {
			defer cancel()
			errs <- c.run(ctx)
		}()
	}
	err := n.elector.Run(ctx)
	cancel()
	for range n.companions {
		err = errors.Join(err, <-errs)
	}
	return err
}
