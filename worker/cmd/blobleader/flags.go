package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/blobleader/blobleader/worker/dialer"
	"github.com/blobleader/blobleader/worker/election"
	"github.com/blobleader/blobleader/worker/election/bloblock"
	"github.com/blobleader/blobleader/worker/shard"
	"github.com/blobleader/blobleader/worker/storage"
)

// usageError is an invalid configuration: exit 2, message names the flag.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return &usageError{fmt.Sprintf(format, args...)} }

// storageOptions are shared by the worker and its ledger subcommand.
type storageOptions struct {
	connectionString string
	accountURL       string
	container        string
	blob             string
	storageDial      string // host:port every storage connection dials (the chaos sidecar); TLS still verifies the storage host
}

type options struct {
	storageOptions
	identity        string
	timing          election.Timing // --lease-duration, --renew-deadline, --renew-interval, --retry-period
	watchdogTimeout time.Duration
	shutdownGrace   time.Duration
	tokenTimeout    time.Duration   // how long the first storage token may take (--account-url only)
	takeover        takeoverOptions // takeoverflags.go
	tick            time.Duration
	listen          string
	history         string
	logFormat       string
	controlListen   string       // control.go
	shards          int          // shards.go: 0 = single-task mode
	build           buildOptions // what only some builds have (buildoptions.go)
}

func envName(flagName string) string {
	return "BLOBLEADER_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

func (s *storageOptions) register(fs *flag.FlagSet) {
	fs.StringVar(&s.connectionString, "connection-string", "", "storage connection string, e.g. Azurite's (also AZURE_STORAGE_CONNECTION_STRING)")
	fs.StringVar(&s.accountURL, "account-url", "", "blob account URL, e.g. https://acct.blob.core.windows.net; authenticates with DefaultAzureCredential (AZURE_CLIENT_ID selects a user-assigned identity; AZURE_TOKEN_CREDENTIALS=ManagedIdentityCredential uses only that)")
	fs.StringVar(&s.container, "container", "leases", "container that holds the lock blob and the ledger")
	fs.StringVar(&s.blob, "blob", "leader", "name of the lock blob: 1–900 bytes that storage keeps as written (no \\, no path segment ending in a dot, no empty segment, no control character)")
	fs.StringVar(&s.storageDial, "storage-dial", "", "host:port to dial for every storage connection instead of the storage host (the chaos sidecar's local proxy); TLS still verifies the storage host name; the history sink dials storage directly")
}

func parseOptions(args []string, out io.Writer) (*options, error) {
	o := &options{}
	fs := newFlagSet("blobleader", out, `blobleader — one contender in a leader election on an Azure Blob Storage lease.
The leader appends to a fenced ledger every --tick; followers watch and take over.

Usage:
  blobleader [flags]            run (SIGTERM/SIGINT: stop the task, release the lease, exit 0)
  blobleader run [flags] -- COMMAND [ARGS...]
                                run COMMAND only while leading (blobleader run --help)
  blobleader ledger [flags]     print and verify the ledger (blobleader ledger --help)
  blobleader status [--url U]   print a running worker's /status (for images without a shell)
  blobleader shards [flags]     print the leader's summary of a --shards pool (blobleader shards --help)
  blobleader recover-term --floor N [flags]
                                set the lock's term above N with the workers up (blobleader recover-term --help)

Exit codes: 0 clean stop, 2 invalid configuration, 1 anything else.`)
	o.register(fs.FlagSet)
	fs.DurationVar(&o.tick, "tick", time.Second, "leader task period: one ledger append per tick; 10ms–1h")
	o.registerShards(fs.FlagSet)
	if err := fs.parse(args); err != nil {
		return nil, err
	}
	if err := o.finishWorker(fs); err != nil {
		return nil, fs.explain(err)
	}
	return o, nil
}

// finishWorker is finish plus the worker's own rules.
func (o *options) finishWorker(fs *cmdFlags) error {
	if err := o.finish(fs); err != nil {
		return err
	}
	if o.tick < 10*time.Millisecond || o.tick > time.Hour {
		return usagef("invalid --tick %s: must be between 10ms and 1h", o.tick)
	}
	if err := o.validateTick(); err != nil {
		return err
	}
	return o.validateShardTimings()
}

// register adds the flags every contending mode shares (the worker and run).
func (o *options) register(fs *flag.FlagSet) {
	o.storageOptions.register(fs)
	d := election.DefaultConfig("")
	fs.StringVar(&o.identity, "identity", "", "this contender's name in the lock metadata, events and /status: printable ASCII, no leading or trailing space, at most 256 bytes; with --shards or --history blob it names blobs too, so no \\ and no trailing dot (default <hostname>-<pid>)")
	fs.DurationVar(&o.timing.LeaseDuration, "lease-duration", d.LeaseDuration, "lease duration L, 15s–60s")
	fs.DurationVar(&o.timing.RenewDeadline, "renew-deadline", d.RenewDeadline, "leader steps down when this long has passed since its last successful renew was sent; < L − 2s")
	fs.DurationVar(&o.timing.RenewInterval, "renew-interval", d.RenewInterval, "leader renews this often; ≤ renew-deadline/3")
	fs.DurationVar(&o.timing.RetryPeriod, "retry-period", d.RetryPeriod, "follower poll period P (jittered ±10%); ≥ 500ms (every follower polls the one lock blob, which storage throttles past 500 requests a second)")
	fs.DurationVar(&o.watchdogTimeout, "watchdog-timeout", 10*time.Second, "leader steps down if its task shows no progress for this long; 0 disables; else ≥ renew-interval")
	fs.DurationVar(&o.shutdownGrace, "shutdown-grace", d.ShutdownGrace, "how long a stopping leader waits for its task before releasing")
	fs.DurationVar(&o.tokenTimeout, "token-timeout", 3*time.Minute, "with --account-url: how long to wait at start for the first storage token, outside the per-request timeout (a managed-identity endpoint can be slow to answer first); ≥ 1s")
	o.takeover.register(fs)
	fs.StringVar(&o.listen, "listen", ":8080", "HTTP address for /healthz /readyz /status /metrics")
	fs.StringVar(&o.history, "history", "", "write election events as JSON lines to this file, or `blob` to append them to the history container (one append blob per process under <identity>/)")
	fs.StringVar(&o.logFormat, "log-format", "auto", "log format on stderr: auto (text on a terminal, JSON otherwise), text, json")
	o.build.register(fs)
	o.registerControl(fs)
}

// finish refuses what this build cannot do, defaults the identity and
// validates, after parse.
func (o *options) finish(fs *cmdFlags) error {
	if err := o.build.check(); err != nil {
		return err
	}
	if !fs.set("identity") {
		host, _ := os.Hostname()
		o.identity = fmt.Sprintf("%s-%d", host, os.Getpid())
	}
	return o.validate()
}

// Azure container names: 3–63 characters, lowercase letters, digits and
// single hyphens, starting and ending with a letter or digit.
var containerName = regexp.MustCompile(`^[a-z0-9]([a-z0-9]|-[a-z0-9]){1,62}$`)

func (s *storageOptions) validate() error {
	connFlag := "--connection-string"
	if s.connectionString == "" && s.accountURL == "" {
		if s.connectionString = os.Getenv("AZURE_STORAGE_CONNECTION_STRING"); s.connectionString != "" {
			connFlag = "AZURE_STORAGE_CONNECTION_STRING (for --connection-string)"
		}
	}
	switch {
	case s.connectionString == "" && s.accountURL == "":
		return usagef("no storage: set --account-url (Azure, keyless) or --connection-string (Azurite)")
	case s.connectionString != "" && s.accountURL != "":
		return usagef("--account-url and --connection-string are exclusive: set one")
	case len(s.container) < 3 || len(s.container) > 63 || !containerName.MatchString(s.container):
		return usagef("invalid --container %q: must be 3–63 lowercase letters, digits and single hyphens, starting and ending with a letter or digit", s.container)
	case s.blob == "" || len(s.blob) > 900:
		return usagef("invalid --blob %q: must be 1–900 characters", s.blob)
	}
	if err := storage.CheckBlobName(s.blob); err != nil {
		return usagef("invalid --blob %q: must %v", s.blob, err)
	}
	if s.storageDial != "" {
		if err := dialer.Validate(s.storageDial); err != nil {
			return usagef("invalid --storage-dial %q: must be host:port, e.g. 127.0.0.1:10443", s.storageDial)
		}
	}
	if s.accountURL != "" {
		u, err := url.Parse(s.accountURL)
		if err != nil || u.Scheme != "https" || u.Host == "" || (u.Path != "" && u.Path != "/") {
			return usagef("invalid --account-url %q: must be https://<account>.blob.<suffix> with no path", s.accountURL)
		}
	}
	if s.connectionString != "" {
		// Build (not use) a client: catches a malformed string or key now.
		if _, err := bloblock.NewContainerClient(bloblock.ClientConfig{ConnectionString: s.connectionString, Container: s.container}); err != nil {
			return usagef("invalid %s: %v", connFlag, strings.TrimPrefix(err.Error(), "bloblock: "))
		}
	}
	return nil
}

// Go field names in election.ConfigError, as flags.
var fieldFlags = map[string]string{
	"Identity": "--identity", "LeaseDuration": "--lease-duration", "RenewDeadline": "--renew-deadline",
	"RenewInterval": "--renew-interval", "RetryPeriod": "--retry-period",
	"WatchdogTimeout": "--watchdog-timeout", "ShutdownGrace": "--shutdown-grace",
	"TakeoverAfter": "--takeover-after", "BreakPeriod": "--break-period",
}

func (o *options) electionConfig() election.Config {
	c := election.DefaultConfig(o.identity)
	c.Timing = o.timing
	c.WatchdogTimeout, c.ShutdownGrace = o.watchdogTimeout, o.shutdownGrace
	o.takeover.apply(&c)
	o.build.configure(&c)
	return c
}

func (o *options) validate() error {
	if err := o.electionConfig().Validate(); err != nil {
		return configUsage(err)
	}
	if err := o.storageOptions.validate(); err != nil {
		return err
	}
	if err := o.validateControl(); err != nil {
		return err
	}
	if err := o.validateShards(); err != nil {
		return err
	}
	if err := o.validateNames(); err != nil {
		return err
	}
	if _, _, err := net.SplitHostPort(o.listen); err != nil {
		return usagef("invalid --listen %q: must be host:port or :port, e.g. :8080 or 127.0.0.1:8080", o.listen)
	}
	switch {
	case o.tokenTimeout < time.Second:
		return usagef("invalid --token-timeout %s: must be at least 1s", o.tokenTimeout)
	case o.logFormat != "auto" && o.logFormat != "text" && o.logFormat != "json":
		return usagef("invalid --log-format %q: must be auto, text or json", o.logFormat)
	}
	return nil
}

// configUsage turns an election config error into a usage error that names
// the flag and the rule in flag names.
func configUsage(err error) error {
	var ce *election.ConfigError
	if errors.As(err, &ce) {
		rule := ce.Rule
		for field, flagName := range fieldFlags {
			rule = strings.ReplaceAll(rule, field, flagName)
		}
		return usagef("invalid %s %s: %s", fieldFlags[ce.Field], ce.Value, rule)
	}
	return usagef("%v", err)
}

// validateNames refuses an identity that becomes part of a blob name storage
// would not keep as written (docs/architecture.md#names): in shard mode the
// member and report blobs <blob>-shards/members/<identity> and
// .../reports/<identity>, with --history blob the prefix <identity>/ of the
// history blobs. Elsewhere the identity is only metadata. --blob itself is
// checked with the storage flags.
func (o *options) validateNames() error {
	if o.shards > 0 {
		l := shard.Layout{Blob: o.blob}
		for _, name := range []string{l.Member(o.identity), l.Report(o.identity)} {
			if len(name) > storage.MaxBlobName {
				return usagef("invalid --identity %q (%d bytes) with --blob %q (%d bytes): in --shards mode the member blob <blob>-shards/members/<identity> is %d bytes; Azure allows at most %d: shorten either", o.identity, len(o.identity), o.blob, len(o.blob), len(name), storage.MaxBlobName)
			}
			if err := storage.CheckBlobName(name); err != nil {
				return usagef("invalid --identity %q: in --shards mode it names the blob %q, which must %v", o.identity, name, err)
			}
		}
	}
	if o.history == "blob" {
		if err := storage.CheckBlobName(o.identity); err != nil {
			return usagef("invalid --identity %q: with --history blob it names the history blobs <identity>/…, so it must %v", o.identity, err)
		}
	}
	return nil
}
