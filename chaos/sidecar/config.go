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
	WorkerStatus     string        // the worker's /status URL to relay; default http://127.0.0.1:8080/status, empty = off
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
	fs.StringVar(&c.WorkerStatus, "worker-status", "http://127.0.0.1:8080/status", "the worker's /status URL inside the group, relayed in the state on every poll (empty: off)")
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
	return nil
}

// ControlClient is a client for the control container. Its requests go to
// storage directly, never through the sidecar's own proxy.
func (c Config) ControlClient() (*container.Client, error) {
	opts := &container.ClientOptions{}
	opts.Retry = policy.RetryOptions{MaxRetries: 2, TryTimeout: c.Poll}
	if c.ConnectionString != "" {
		return container.NewClientFromConnectionString(c.ConnectionString, c.Container, opts)
	}
	cred, err := azidentity.NewDefaultAzureCredential(nil)
	if err != nil {
		return nil, fmt.Errorf("chaos-sidecar: no Azure credential: %w", err)
	}
	return container.NewClient(strings.TrimSuffix(c.AccountURL, "/")+"/"+c.Container, cred, opts)
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
	cc, err := cfg.ControlClient()
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	px, err := chaos.NewLoopbackProxy(cfg.Name, cfg.Listen, cfg.Upstream)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	defer px.Close()
	log.Info("chaos sidecar started", "listen", px.Addr(), "upstream", cfg.Upstream, "plan", cfg.Container+"/"+PlanBlob(cfg.Name), "poll", cfg.Poll)
	sc := &Sidecar{Proxy: px, Store: &Store{C: cc, Name: cfg.Name}, Poll: cfg.Poll, Log: log, StatusURL: cfg.WorkerStatus}
	if err := sc.Run(ctx); err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	log.Info("chaos sidecar stopped; every fault removed")
	return 0
}
