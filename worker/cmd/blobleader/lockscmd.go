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
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/blobleader/blobleader/worker/boundedlog"
	"github.com/blobleader/blobleader/worker/election"
	"github.com/blobleader/blobleader/worker/lockapi"
	"github.com/blobleader/blobleader/worker/mutex"
	"github.com/blobleader/blobleader/worker/status"
)

// `blobleader locks`: the named-lock HTTP service (worker/lockapi).

// tokenEnv carries the bearer token by value; never a flag (a command line
// is visible to every user of the host).
const tokenEnv = "BLOBLEADER_LOCKS_TOKEN"

type locksOptions struct {
	storage        storageOptions
	store          string
	prefix         string
	listen         string
	grpcListen     string
	tokenFile      string
	maxWait        time.Duration
	retryPeriod    time.Duration
	idleTimeout    time.Duration
	maxConnections int
	logFormat      string
	token          string    // from tokenEnv or --token-file; never logged
	parsed         *cmdFlags // the flag set parsed: names start-up's refusals (cmdFlags.explain)
}

const locksSummary = `blobleader locks — serve named resource locks with Dapr's distributed lock API, over
HTTP (POST /v1.0-alpha1/lock/{store}, POST /v1.0-alpha1/unlock/{store}) and gRPC
(dapr.proto.runtime.v1.Dapr/TryLockAlpha1, /UnlockAlpha1, /GetMetadata), plus the fencing
term, a bounded wait, POST /v1.0-alpha1/renew/{store} and GET /v1.0-alpha1/lock/{store}?resourceId=.
Point any Dapr SDK at it: DAPR_HTTP_ENDPOINT=http://127.0.0.1:3500,
DAPR_GRPC_ENDPOINT=127.0.0.1:50001 (gRPC is also served on --listen).
Stateless: run as many replicas as you like on the same container.

Usage:
  blobleader locks [flags]

A listen address (--listen or --grpc-listen) that is not loopback requires a
bearer token: ` + tokenEnv + ` (the token itself) or --token-file. Requests
then carry "Authorization: Bearer <token>" or Dapr's "dapr-api-token: <token>"
(gRPC: the same as metadata). GET /healthz, /readyz, /v1.0/healthz,
/v1.0/healthz/outbound and /metrics answer without one.

Exit codes: 0 clean stop (SIGTERM/SIGINT), 2 invalid configuration, 1 anything else.`

// registerStorageFlags adds the storage flags of every mode but --blob: the
// lock blobs' names derive from --prefix and each resource id.
func registerStorageFlags(fs *flag.FlagSet, s *storageOptions) {
	all := flag.NewFlagSet("", flag.ContinueOnError)
	s.register(all)
	all.VisitAll(func(f *flag.Flag) {
		if f.Name != "blob" {
			fs.Var(f.Value, f.Name, f.Usage)
		}
	})
}

func parseLocksOptions(args []string, out io.Writer) (*locksOptions, error) {
	o := &locksOptions{}
	fs := o.flags(out)
	if err := fs.parse(args); err != nil {
		return nil, err
	}
	if err := o.validate(); err != nil {
		return nil, fs.explain(err)
	}
	o.parsed = fs
	return o, nil
}

func (o *locksOptions) flags(out io.Writer) *cmdFlags {
	fs := newFlagSet("blobleader locks", out, locksSummary)
	registerStorageFlags(fs.FlagSet, &o.storage)
	fs.StringVar(&o.store, "store", "lockstore", "the store name in every path ({store}); it names --container's locks")
	fs.StringVar(&o.prefix, "prefix", mutex.DefaultPrefix, "blob name prefix of the lock blobs: <prefix>/<sha-256 of the resource id>")
	fs.StringVar(&o.listen, "listen", "127.0.0.1:3500", "HTTP address (Dapr's HTTP port; gRPC is served here too); not loopback requires a token ("+tokenEnv+" or --token-file)")
	fs.StringVar(&o.grpcListen, "grpc-listen", "127.0.0.1:50001", "gRPC address (Dapr's gRPC port); empty: gRPC on --listen only; not loopback requires a token")
	fs.StringVar(&o.tokenFile, "token-file", "", "file holding the bearer token (one line)")
	fs.DurationVar(&o.maxWait, "max-wait", 30*time.Second, "the longest waitSeconds a lock request may ask for; 0s–60s")
	fs.DurationVar(&o.retryPeriod, "retry-period", election.DefaultTiming().RetryPeriod, "how often a waiting lock request tries again (jittered ±10%); ≥ 500ms")
	fs.DurationVar(&o.idleTimeout, "idle-timeout", 30*time.Second, "close a connection idle this long between requests; 1s–10m")
	fs.IntVar(&o.maxConnections, "max-connections", 1024, "serve at most this many connections at once (both addresses together); more wait to be accepted; 1–65536")
	fs.StringVar(&o.logFormat, "log-format", "auto", "log format on stderr: auto, text, json")
	return fs
}

// locksFlags are the flags that set the lock service's mutex.Config fields.
var locksFlags = map[string]string{"Prefix": "prefix", "RetryPeriod": "retry-period"}

func (o *locksOptions) validate() error {
	if err := o.storage.validate(); err != nil {
		return err
	}
	cfg := mutex.DefaultConfig("blobleader-locks")
	cfg.Prefix, cfg.RetryPeriod = o.prefix, o.retryPeriod
	if err := cfg.Validate(); err != nil {
		return configUsage(err, locksFlags)
	}
	switch {
	case o.store == "":
		return usagef("invalid %s: must not be empty", flagRef("store"))
	case o.maxWait < 0 || o.maxWait > 60*time.Second:
		return usagef("invalid %s %s: must be between 0s and 60s", flagRef("max-wait"), o.maxWait)
	case o.idleTimeout < time.Second || o.idleTimeout > 10*time.Minute:
		return usagef("invalid %s %s: must be between 1s and 10m", flagRef("idle-timeout"), o.idleTimeout)
	case o.maxConnections < 1 || o.maxConnections > 65536:
		return usagef("invalid %s %d: must be between 1 and 65536", flagRef("max-connections"), o.maxConnections)
	case o.grpcListen != "" && o.grpcListen == o.listen && !anyPortAddr(o.listen):
		return usagef("invalid %s %q: the same address as %s (gRPC is served on %s too; set %s to another address, or empty)", flagRef("grpc-listen"), o.grpcListen, flagRef("listen"), flagRef("listen"), flagRef("grpc-listen"))
	case o.logFormat != "auto" && o.logFormat != "text" && o.logFormat != "json":
		return usagef("invalid %s %q: must be auto, text or json", flagRef("log-format"), o.logFormat)
	}
	if err := o.readToken(); err != nil {
		return err
	}
	for _, l := range []struct {
		flag flagRef
		addr string
	}{{"listen", o.listen}, {"grpc-listen", o.grpcListen}} {
		if o.token == "" && l.addr != "" && !loopbackListen(l.addr) {
			return usagef("invalid %s %q: an address that is not loopback requires a bearer token (%s or %s), so that nothing off the host takes or frees locks unauthenticated", l.flag, l.addr, tokenEnv, flagRef("token-file"))
		}
	}
	return o.storage.requireStorage()
}

// readToken takes the token from tokenEnv or --token-file (not both).
func (o *locksOptions) readToken() error {
	env, hasEnv := os.LookupEnv(tokenEnv)
	switch {
	case hasEnv && o.tokenFile != "":
		return usagef("%s and %s are exclusive: set one", tokenEnv, flagRef("token-file"))
	case hasEnv:
		if o.token = strings.TrimSpace(env); o.token == "" {
			return usagef("invalid %s: must not be empty", tokenEnv)
		}
	case o.tokenFile != "":
		b, err := os.ReadFile(o.tokenFile)
		if err != nil {
			return usagef("invalid %s %q: cannot read it: %v", flagRef("token-file"), o.tokenFile, errors.Unwrap(err))
		}
		if o.token = strings.TrimSpace(string(b)); o.token == "" || strings.ContainsAny(o.token, "\r\n") {
			return usagef("invalid %s %q: must hold one non-empty line", flagRef("token-file"), o.tokenFile)
		}
	}
	return nil
}

// anyPortAddr reports whether addr asks for port 0: a port the kernel
// picks, a different one for each listener, so two such addresses never
// clash (the start line logs the ports picked).
func anyPortAddr(addr string) bool {
	_, port, err := net.SplitHostPort(addr)
	return err == nil && port == "0"
}

// loopbackListen reports whether addr listens on loopback only.
func loopbackListen(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func runLocks(args []string, stdout, stderr io.Writer) error {
	o, err := parseLocksOptions(args, stdout)
	if err != nil {
		return err
	}
	return o.parsed.explain(o.serve(stderr))
}

// serve serves the lock API until SIGTERM or SIGINT.
func (o *locksOptions) serve(stderr io.Writer) error {
	logs := boundedlog.New(newLogger(o.logFormat, stderr).Handler(), boundedlog.Options{})
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), exitFlush)
		defer cancel()
		_ = logs.Close(ctx)
	}()
	log := slog.New(logs.Handler())
	logUnknownEnv(log)
	cfg := mutex.DefaultConfig("blobleader-locks")
	cfg.Prefix, cfg.RetryPeriod = o.prefix, o.retryPeriod
	metrics := lockapi.NewMetrics()
	metrics.Registry.MustRegister(status.NewLogDrops(logs.Dropped))
	c, err := newContainerClient(o.storage, nil, cfg.RequestTimeout(), metrics.ObserveStorage)
	if err != nil {
		return err
	}
	locker, err := mutex.New(c, cfg)
	if err != nil {
		return err
	}
	api := lockapi.New(locker, lockapi.Config{Store: o.store, Token: o.token, MaxWait: o.maxWait, Logger: log, Metrics: metrics}, cfg.JitteredRetryPeriod)
	lns, err := o.listeners()
	if err != nil {
		return err
	}
	srv := newLockServer(api, o.idleTimeout)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	served := make(chan error, len(lns))
	for _, ln := range lns {
		go func() { served <- srv.Serve(ln) }()
	}
	grpcAddr := ""
	if len(lns) > 1 {
		grpcAddr = lns[1].Addr().String()
	}
	log.Info("lock service started", "listen", lns[0].Addr().String(), "grpc_listen", grpcAddr, "store", o.store,
		"container", o.storage.container, "prefix", o.prefix, "token", o.token != "", "max_wait", o.maxWait,
		"idle_timeout", o.idleTimeout, "max_connections", o.maxConnections)
	select {
	case err = <-served:
		return fmt.Errorf("http server: %w", err)
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), o.maxWait+5*time.Second)
	defer cancel()
	_ = srv.Shutdown(shutdown)
	log.Info("stopped cleanly")
	return nil
}

// Header timeouts: a connection must send a request's headers within
// readHeaderTimeout of its start (or of the last answer).
const readHeaderTimeout = 5 * time.Second

// newLockServer serves h over HTTP/1.1 and cleartext HTTP/2 (h2c with prior
// knowledge, which gRPC clients speak), closing connections idle for idle
// and those that do not send a request's headers in time.
func newLockServer(h http.Handler, idle time.Duration) *http.Server {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: readHeaderTimeout, IdleTimeout: idle}
	srv.Protocols = new(http.Protocols)
	srv.Protocols.SetHTTP1(true)
	srv.Protocols.SetUnencryptedHTTP2(true)
	return srv
}

// listeners opens --listen and, unless empty, --grpc-listen, sharing one
// bound of --max-connections.
func (o *locksOptions) listeners() ([]net.Listener, error) {
	slots := make(chan struct{}, o.maxConnections)
	var lns []net.Listener
	for _, l := range []struct {
		flag flagRef
		addr string
	}{{"listen", o.listen}, {"grpc-listen", o.grpcListen}} {
		if l.addr == "" {
			continue
		}
		ln, err := net.Listen("tcp", l.addr)
		if err != nil {
			for _, open := range lns {
				_ = open.Close()
			}
			return nil, usagef("cannot listen on %s %s: %v", l.flag, l.addr, causeOf(err))
		}
		lns = append(lns, &boundedListener{Listener: ln, slots: slots})
	}
	return lns, nil
}

// boundedListener accepts a connection only while fewer than cap(slots)
// are open; more wait in the kernel's backlog until one closes.
type boundedListener struct {
	net.Listener
	slots chan struct{}
}

func (l *boundedListener) Accept() (net.Conn, error) {
	l.slots <- struct{}{}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.slots
		return nil, err
	}
	return &slotConn{Conn: c, free: func() { <-l.slots }}, nil
}

// slotConn gives its slot back once, when closed.
type slotConn struct {
	net.Conn
	once sync.Once
	free func()
}

func (c *slotConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.free)
	return err
}
