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
	"syscall"
	"time"

	"github.com/blobleader/blobleader/worker/boundedlog"
	"github.com/blobleader/blobleader/worker/election"
	"github.com/blobleader/blobleader/worker/lockapi"
	"github.com/blobleader/blobleader/worker/mutex"
)

// `blobleader locks`: the named-lock HTTP service (worker/lockapi).

// tokenEnv carries the bearer token by value; never a flag (a command line
// is visible to every user of the host).
const tokenEnv = "BLOBLEADER_LOCKS_TOKEN"

type locksOptions struct {
	storage     storageOptions
	store       string
	prefix      string
	listen      string
	tokenFile   string
	maxWait     time.Duration
	retryPeriod time.Duration
	logFormat   string
	token       string // from tokenEnv or --token-file; never logged
}

const locksSummary = `blobleader locks — serve named resource locks over HTTP: Dapr's distributed lock API
(POST /v1.0-alpha1/lock/{store}, POST /v1.0-alpha1/unlock/{store}) plus the fencing
term, a bounded wait, POST /v1.0-alpha1/renew/{store} and GET /v1.0-alpha1/lock/{store}?resourceId=.
Stateless: run as many replicas as you like on the same container.

Usage:
  blobleader locks [flags]

A listen address that is not loopback requires a bearer token: ` + tokenEnv + `
(the token itself) or --token-file. Requests then carry "Authorization: Bearer
<token>" (or Dapr's "dapr-api-token: <token>"). GET /healthz answers 200 without one.

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
	fs := newFlagSet("blobleader locks", out, locksSummary)
	registerStorageFlags(fs.FlagSet, &o.storage)
	fs.StringVar(&o.store, "store", "lockstore", "the store name in every path ({store}); it names --container's locks")
	fs.StringVar(&o.prefix, "prefix", mutex.DefaultPrefix, "blob name prefix of the lock blobs: <prefix>/<sha-256 of the resource id>")
	fs.StringVar(&o.listen, "listen", "127.0.0.1:3500", "HTTP address; not loopback requires a token ("+tokenEnv+" or --token-file)")
	fs.StringVar(&o.tokenFile, "token-file", "", "file holding the bearer token (one line)")
	fs.DurationVar(&o.maxWait, "max-wait", 30*time.Second, "the longest waitSeconds a lock request may ask for; 0s–60s")
	fs.DurationVar(&o.retryPeriod, "retry-period", election.DefaultTiming().RetryPeriod, "how often a waiting lock request tries again (jittered ±10%); ≥ 500ms")
	fs.StringVar(&o.logFormat, "log-format", "auto", "log format on stderr: auto, text, json")
	if err := fs.parse(args); err != nil {
		return nil, err
	}
	return o, o.validate()
}

func (o *locksOptions) validate() error {
	if err := o.storage.validate(); err != nil {
		return err
	}
	cfg := mutex.DefaultConfig("blobleader-locks")
	cfg.Prefix, cfg.RetryPeriod = o.prefix, o.retryPeriod
	var ce *election.ConfigError
	if err := cfg.Validate(); errors.As(err, &ce) {
		flagName := map[string]string{"Prefix": "--prefix", "RetryPeriod": "--retry-period"}[ce.Field]
		return usagef("invalid %s %s: %s", flagName, ce.Value, ce.Rule)
	}
	switch {
	case o.store == "":
		return usagef("invalid --store: must not be empty")
	case o.maxWait < 0 || o.maxWait > 60*time.Second:
		return usagef("invalid --max-wait %s: must be between 0s and 60s", o.maxWait)
	case o.logFormat != "auto" && o.logFormat != "text" && o.logFormat != "json":
		return usagef("invalid --log-format %q: must be auto, text or json", o.logFormat)
	}
	if err := o.readToken(); err != nil {
		return err
	}
	if o.token == "" && !loopbackListen(o.listen) {
		return usagef("invalid --listen %q: an address that is not loopback requires a bearer token (%s or --token-file), so that nothing off the host takes or frees locks unauthenticated", o.listen, tokenEnv)
	}
	return nil
}

// readToken takes the token from tokenEnv or --token-file (not both).
func (o *locksOptions) readToken() error {
	env, hasEnv := os.LookupEnv(tokenEnv)
	switch {
	case hasEnv && o.tokenFile != "":
		return usagef("%s and --token-file are exclusive: set one", tokenEnv)
	case hasEnv:
		if o.token = strings.TrimSpace(env); o.token == "" {
			return usagef("invalid %s: must not be empty", tokenEnv)
		}
	case o.tokenFile != "":
		b, err := os.ReadFile(o.tokenFile)
		if err != nil {
			return usagef("invalid --token-file %q: cannot read it: %v", o.tokenFile, errors.Unwrap(err))
		}
		if o.token = strings.TrimSpace(string(b)); o.token == "" || strings.ContainsAny(o.token, "\r\n") {
			return usagef("invalid --token-file %q: must hold one non-empty line", o.tokenFile)
		}
	}
	return nil
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
	logs := boundedlog.New(newLogger(o.logFormat, stderr).Handler(), boundedlog.Options{})
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), exitFlush)
		defer cancel()
		_ = logs.Close(ctx)
	}()
	log := slog.New(logs.Handler())
	cfg := mutex.DefaultConfig("blobleader-locks")
	cfg.Prefix, cfg.RetryPeriod = o.prefix, o.retryPeriod
	c, err := newContainerClient(o.storage, nil, cfg.RequestTimeout(), nil)
	if err != nil {
		return err
	}
	locker, err := mutex.New(c, cfg)
	if err != nil {
		return err
	}
	api := lockapi.New(locker, lockapi.Config{Store: o.store, Token: o.token, MaxWait: o.maxWait, Logger: log}, cfg.JitteredRetryPeriod)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	mux.Handle("/", api)
	ln, err := net.Listen("tcp", o.listen)
	if err != nil {
		return usagef("cannot listen on --listen %s: %v", o.listen, causeOf(err))
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	log.Info("lock service started", "listen", ln.Addr().String(), "store", o.store, "container", o.storage.container,
		"prefix", o.prefix, "token", o.token != "", "max_wait", o.maxWait.String())
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
