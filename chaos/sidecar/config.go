package sidecar

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/blobleader/blobleader/chaos"
)

// Config is the sidecar program's configuration; every flag has an env twin
// BLOBLEADER_CHAOS_<NAME> (a flag beats its env var).
type Config struct {
	Name             string        // the worker's container group name: plans/<name>.json
	Listen           string        // loopback host:port the proxy listens on; default 127.0.0.1:10443
	Upstream         string        // storage host:port; default the account URL's host on 443
	AccountURL       string        // https://<account>.blob.core.windows.net (DefaultAzureCredential, AZURE_CLIENT_ID)
	ConnectionString string        // instead of AccountURL (Azurite, tests)
	Container        string        // control container; default "chaos"
	Poll             time.Duration // plan poll period; default 1 s
	RequestTimeout   time.Duration // bound of one control-blob request (each try, token fetch included); default 10 s
	TokenTimeout     time.Duration // how long to wait for the first storage token at start; default 3 min
	WorkerStatus     string        // the worker's /status URL to relay; default http://127.0.0.1:8080/status, empty = off
	WorkerStop       string        // the worker's control stop URL (its --control-listen); default http://127.0.0.1:8081/stop, empty = off
}

// ErrConfig is wrapped by every configuration error (exit code 2).
var ErrConfig = errors.New("chaos-sidecar: invalid configuration")

// ParseConfig reads flags, then env twins for the flags not given.
func ParseConfig(args []string, lookup func(string) (string, bool), out io.Writer) (Config, error) {
	var c Config
	fs := flag.NewFlagSet("chaos-sidecar", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.StringVar(&c.Name, "name", "", "the worker's container group name (its plan is plans/<name>.json); required")
	fs.StringVar(&c.Listen, "listen", "127.0.0.1:10443", "loopback host:port of the proxy the worker dials (--storage-dial)")
	fs.StringVar(&c.Upstream, "upstream", "", "storage host:port the proxy forwards to (default: the account URL's host, port 443)")
	fs.StringVar(&c.AccountURL, "account-url", "", "blob account URL for the control blobs; DefaultAzureCredential (AZURE_CLIENT_ID)")
	fs.StringVar(&c.ConnectionString, "connection-string", "", "storage connection string instead of --account-url (Azurite)")
	fs.StringVar(&c.Container, "container", DefaultContainer, "control container holding plans/ and state/")
	fs.DurationVar(&c.Poll, "poll", time.Second, "how often to read the plan and write the state")
	fs.DurationVar(&c.RequestTimeout, "request-timeout", 10*time.Second, "bound of one control-blob request, token fetch included (independent of --poll: a slow token endpoint must not starve the sidecar)")
	fs.DurationVar(&c.TokenTimeout, "token-timeout", 3*time.Minute, "how long to wait at start for the first storage token (ACI's managed-identity endpoint can be slow to answer first)")
	fs.StringVar(&c.WorkerStatus, "worker-status", "http://127.0.0.1:8080/status", "the worker's /status URL inside the group, relayed in the state on every poll (empty: off)")
	fs.StringVar(&c.WorkerStop, "worker-stop", "http://127.0.0.1:8081/stop", "the worker's control endpoint (its --control-listen) that a plan's stop request is POSTed to (empty: off)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return c, err
		}
		return c, fmt.Errorf("%w: %v", ErrConfig, err)
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	var envErr error
	fs.VisitAll(func(f *flag.Flag) {
		if given[f.Name] || envErr != nil {
			return
		}
		name := "BLOBLEADER_CHAOS_" + strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_"))
		if v, ok := lookup(name); ok {
			if err := f.Value.Set(v); err != nil {
				envErr = fmt.Errorf("%w: %s=%q: %v", ErrConfig, name, v, err)
			}
		}
	})
	if envErr != nil {
		return c, envErr
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("%w: unexpected argument %q", ErrConfig, fs.Arg(0))
	}
	return c, c.validate()
}

func (c *Config) validate() error {
	switch {
	case c.Name == "":
		return fmt.Errorf("%w: --name (BLOBLEADER_CHAOS_NAME) is required", ErrConfig)
	case (c.AccountURL == "") == (c.ConnectionString == ""):
		return fmt.Errorf("%w: set exactly one of --account-url and --connection-string", ErrConfig)
	case c.Poll < 100*time.Millisecond:
		return fmt.Errorf("%w: --poll %s must be at least 100ms", ErrConfig, c.Poll)
	case c.RequestTimeout < time.Second:
		return fmt.Errorf("%w: --request-timeout %s must be at least 1s (a token fetch runs inside it)", ErrConfig, c.RequestTimeout)
	case c.TokenTimeout < time.Second:
		return fmt.Errorf("%w: --token-timeout %s must be at least 1s", ErrConfig, c.TokenTimeout)
	}
	host, _, err := net.SplitHostPort(c.Listen)
	if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("%w: --listen %q must be a loopback IP and port, e.g. 127.0.0.1:10443 (the proxy must not be reachable from outside the group)", ErrConfig, c.Listen)
	}
	if c.AccountURL != "" {
		u, err := url.Parse(c.AccountURL)
		if err != nil || u.Scheme != "https" || u.Hostname() == "" {
			return fmt.Errorf("%w: --account-url %q must be https://<account>.blob.<suffix>", ErrConfig, c.AccountURL)
		}
		if c.Upstream == "" {
			c.Upstream = net.JoinHostPort(u.Hostname(), "443")
		}
	}
	if _, _, err := net.SplitHostPort(c.Upstream); err != nil {
		return fmt.Errorf("%w: --upstream %q must be host:port", ErrConfig, c.Upstream)
	}
	if c.WorkerStop != "" {
		u, err := url.Parse(c.WorkerStop)
		if ip := net.ParseIP(u.Hostname()); err != nil || u.Scheme != "http" || ip == nil || !ip.IsLoopback() {
			return fmt.Errorf("%w: --worker-stop %q must be an http URL on a loopback IP, e.g. http://127.0.0.1:8081/stop (the worker's --control-listen)", ErrConfig, c.WorkerStop)
		}
	}
	return nil
}

// controlClient is a client for the control container. Its requests go to
// storage directly, never through the sidecar's own proxy. Each try gets
// RequestTimeout, not the poll period: the SDK fetches tokens inside a try.
// cred is used with AccountURL; transport, when set, replaces the default
// HTTP client (tests).
func (c Config) controlClient(cred azcore.TokenCredential, transport policy.Transporter) (*container.Client, error) {
	opts := &container.ClientOptions{}
	opts.Retry = policy.RetryOptions{MaxRetries: 2, TryTimeout: c.RequestTimeout}
	if transport != nil {
		opts.Transport = transport
	}
	if c.ConnectionString != "" {
		return container.NewClientFromConnectionString(c.ConnectionString, c.Container, opts)
	}
	return container.NewClient(strings.TrimSuffix(c.AccountURL, "/")+"/"+c.Container, cred, opts)
}

// start builds what Main runs: with an account URL, it first waits (up to
// TokenTimeout) for a storage token from cred, then makes the control client
// and the loopback proxy.
func start(ctx context.Context, cfg Config, cred azcore.TokenCredential, transport policy.Transporter, log *slog.Logger) (*Sidecar, error) {
	if cfg.AccountURL != "" {
		if _, err := AwaitToken(ctx, cred, cfg.TokenTimeout, log); err != nil {
			return nil, err
		}
	}
	cc, err := cfg.controlClient(cred, transport)
	if err != nil {
		return nil, err
	}
	px, err := chaos.NewLoopbackProxy(cfg.Name, cfg.Listen, cfg.Upstream)
	if err != nil {
		return nil, err
	}
	return &Sidecar{Proxy: px, Store: &Store{C: cc, Name: cfg.Name}, Poll: cfg.Poll, RequestTimeout: cfg.RequestTimeout,
		Log: log, StatusURL: cfg.WorkerStatus, StopURL: cfg.WorkerStop}, nil
}

// Main runs the sidecar until ctx ends and returns the exit code: 0 after a
// clean stop, 2 for a configuration error, 1 otherwise.
func Main(ctx context.Context, args []string, lookup func(string) (string, bool), stderr io.Writer) int {
	cfg, err := ParseConfig(args, lookup, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	log := slog.New(slog.NewJSONHandler(stderr, nil)).With("sidecar", cfg.Name)
	var cred azcore.TokenCredential
	if cfg.AccountURL != "" {
		if cred, err = azidentity.NewDefaultAzureCredential(nil); err != nil {
			fmt.Fprintf(stderr, "chaos-sidecar: no Azure credential: %v\n", err)
			return 1
		}
	}
	sc, err := start(ctx, cfg, cred, nil, log)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	defer sc.Proxy.Close()
	log.Info("chaos sidecar started", "listen", sc.Proxy.Addr(), "upstream", cfg.Upstream, "plan", cfg.Container+"/"+PlanBlob(cfg.Name),
		"poll", cfg.Poll, "request_timeout", cfg.RequestTimeout)
	if err := sc.Run(ctx); err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	log.Info("chaos sidecar stopped; every fault removed")
	return 0
}
