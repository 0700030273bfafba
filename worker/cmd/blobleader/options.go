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
	"strconv"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/blobleader/blobleader/worker/dialer"
	"github.com/blobleader/blobleader/worker/election"
	"github.com/blobleader/blobleader/worker/election/bloblock"
	"github.com/blobleader/blobleader/worker/shard"
	"github.com/blobleader/blobleader/worker/storage"
)

// The options of the contending modes, the worker and `blobleader run`:
// every flag (each also read from its env twin BLOBLEADER_<NAME>,
// cmdflags.go), its rule, and the rules between flags that are each in range
// but cannot work together (docs/architecture.md#worker-contracts, and
// "Combinations" in #the-election). run's own flags are in runoptions.go,
// the other subcommands' in subcmdoptions.go.

// storageOptions say where the lock lives: every command that touches
// storage has them.
type storageOptions struct {
	connectionString string // --connection-string, else AZURE_STORAGE_CONNECTION_STRING
	accountURL       string // --account-url (keyless)
	container        string // --container
	blob             string // --blob: the lock blob, and the name the ledger's and a pool's blobs start with
	storageDial      string // --storage-dial: host:port every storage connection dials (the chaos sidecar); TLS still verifies the storage host
}

// options are what every contending mode shares: the election, storage,
// the endpoints and the outputs.
type options struct {
	storageOptions
	identity        string          // --identity (default <hostname>-<pid>)
	profile         string          // --profile: the timing bundle the unset timing flags come from (profile.go)
	timing          election.Timing // --lease-duration, --renew-deadline, --renew-interval, --retry-period
	watchdogTimeout time.Duration   // --watchdog-timeout; 0 off
	shutdownGrace   time.Duration   // --shutdown-grace
	tokenTimeout    time.Duration   // --token-timeout: how long the first storage token may take (--account-url only)
	takeover        takeoverOptions // --takeover-after
	listen          string          // --listen: /healthz /readyz /status /metrics
	history         string          // --history: a file, `blob`, or "" for none
	logFormat       string          // --log-format
	controlListen   string          // --control-listen (control.go); "" off
	build           buildOptions    // what only some builds have (buildoptions.go)
	// parsed is the flag set the options came from: a refusal built after
	// parsing (start-up) passes through its explain, naming each flag
	// under the name its value came from (cmdFlags.explain).
	parsed *cmdFlags
	// openLock opens the lock on --blob when it is not plain bloblock.New:
	// `blobleader lock` sets its resource's named lock (mutex.BlobLease,
	// whose record names the resource). nil: bloblock.New.
	openLock func(*container.Client) (*bloblock.Lock, error)
}

// takeoverOptions are early takeover's (docs/failover.md#early-takeover).
type takeoverOptions struct {
	takeoverAfter time.Duration // --takeover-after; 0 off
	// breakPeriod: --break-period, which the previous design had (a break
	// with a period); now a break ends the lease at once. Accepted as 0 so
	// that scripts and deployments that spelled out the old default keep
	// working, refused otherwise, never listed.
	breakPeriod time.Duration
}

// workerOptions are the worker's: the shared options and its leader task's.
type workerOptions struct {
	options
	tick   time.Duration // --tick: one ledger append per tick
	shards int           // --shards: 0 single-task mode
}

const workerSummary = `blobleader — one contender in a leader election on an Azure Blob Storage lease.
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
  blobleader locks [flags]      serve named resource locks over HTTP, Dapr's lock API (blobleader locks --help)
  blobleader lock RESOURCE [flags] -- COMMAND [ARGS...]
                                run COMMAND once under RESOURCE's named lock (blobleader lock --help)
  blobleader --version          print the version the build recorded (also: blobleader version)

Exit codes: 0 clean stop, 2 invalid configuration, 1 anything else.`

// parseOptions parses and checks the worker's command line.
func parseOptions(args []string, out io.Writer) (*workerOptions, error) {
	o := &workerOptions{}
	fs := o.flags(out)
	if err := fs.parse(args); err != nil {
		return nil, err
	}
	if err := o.finish(fs); err != nil {
		return nil, fs.explain(err)
	}
	o.parsed = fs
	return o, nil
}

// flags is the worker's flag set, registered on o.
func (o *workerOptions) flags(out io.Writer) *cmdFlags {
	fs := newFlagSet("blobleader", out, workerSummary)
	o.register(fs)
	fs.DurationVar(&o.tick, "tick", time.Second, "leader task period: one ledger append per tick; 10ms–1h")
	fs.IntVar(&o.shards, "shards", 0, "Leader-Followers: the leader assigns N work shards (1–1024) to the live workers, balanced and sticky; a worker works a shard (a fenced ledger append every --tick) only while it holds the shard's own lease; 0 = single-task mode")
	return fs
}

// register adds the flags every contending mode shares.
func (o *options) register(fs *cmdFlags) {
	o.storageOptions.register(fs.FlagSet)
	d := election.DefaultConfig("")
	fs.StringVar(&o.profile, "profile", "default", profileUsage())
	fs.StringVar(&o.identity, "identity", "", "this contender's name in the lock metadata, events and /status: printable ASCII, no leading or trailing space, at most 256 bytes; with --shards or --history blob it names blobs too, so no \\ and no trailing dot (default <hostname>-<pid>)")
	fs.DurationVar(&o.timing.LeaseDuration, "lease-duration", d.LeaseDuration, "lease duration L, 15s–60s")
	fs.DurationVar(&o.timing.RenewDeadline, "renew-deadline", d.RenewDeadline, "leader steps down when this long has passed since its last successful renew was sent; < L − 2s")
	fs.DurationVar(&o.timing.RenewInterval, "renew-interval", d.RenewInterval, "leader renews this often; ≤ renew-deadline/3")
	fs.DurationVar(&o.timing.RetryPeriod, "retry-period", d.RetryPeriod, "follower poll period P (jittered ±10%); ≥ 500ms (every follower polls the one lock blob, which storage throttles past 500 requests a second)")
	fs.DurationVar(&o.watchdogTimeout, "watchdog-timeout", 10*time.Second, "leader steps down if its task shows no progress (work that landed) for this long; 0 disables; else ≥ --renew-interval, and for the worker more than --tick + 2 × request timeout (with --shards also ≥ 1.1 × --retry-period + 2 × request timeout); request timeout = min(--renew-interval, --renew-deadline/3)")
	fs.DurationVar(&o.shutdownGrace, "shutdown-grace", d.ShutdownGrace, "how long a stopping leader waits for its task before releasing")
	fs.DurationVar(&o.tokenTimeout, "token-timeout", 3*time.Minute, "with --account-url: how long to wait at start for the first storage token, outside the per-request timeout (a managed-identity endpoint can be slow to answer first); ≥ 1s")
	o.takeover.register(fs)
	fs.StringVar(&o.listen, "listen", ":8080", "HTTP address for /healthz /readyz /status /metrics")
	fs.StringVar(&o.history, "history", "", "write election events as JSON lines to this file, or `blob` to append them to the history container (one append blob per process under <identity>/)")
	fs.StringVar(&o.logFormat, "log-format", "auto", "log format on stderr: auto (text on a terminal, JSON otherwise), text, json")
	o.build.register(fs)
	fs.StringVar(&o.controlListen, "control-listen", "", "loopback host:port for the control endpoint: POST /stop there stops this worker as SIGTERM would (the Azure chaos sidecar uses it); empty: off")
}

func (s *storageOptions) register(fs *flag.FlagSet) {
	fs.StringVar(&s.connectionString, "connection-string", "", "storage connection string, e.g. Azurite's (also AZURE_STORAGE_CONNECTION_STRING)")
	fs.StringVar(&s.accountURL, "account-url", "", "blob account URL, e.g. https://acct.blob.core.windows.net; authenticates with DefaultAzureCredential (AZURE_CLIENT_ID selects a user-assigned identity; AZURE_TOKEN_CREDENTIALS=ManagedIdentityCredential uses only that)")
	fs.StringVar(&s.container, "container", "leases", "container that holds the lock blob and the ledger")
	fs.StringVar(&s.blob, "blob", "leader", "name of the lock blob: 1–900 bytes that storage keeps as written (no \\, no path segment ending in a dot, no empty segment, no control character)")
	fs.StringVar(&s.storageDial, "storage-dial", "", "host:port to dial for every storage connection instead of the storage host (the chaos sidecar's local proxy); TLS still verifies the storage host name; the history sink dials storage directly")
}

func (t *takeoverOptions) register(fs *cmdFlags) {
	fs.DurationVar(&t.takeoverAfter, "takeover-after", 0, "early takeover: a follower that reads the leader's record unchanged for this long breaks its lease at once, conditioned on that record, and leads (0: off, wait out the lease); ≥ renew-deadline + request timeout + 250ms, ≥ 2 × renew-interval and renew-interval + 2 × request timeout, < lease-duration (docs/failover.md#early-takeover)")
	fs.DurationVar(&t.breakPeriod, "break-period", 0, "removed: early takeover breaks the lease at once; only 0 is accepted")
	fs.hide("break-period")
}

// validate refuses what the previous early-takeover design had and this one
// does not: a break with a period.
func (t *takeoverOptions) validate() error {
	if t.breakPeriod != 0 {
		return usagef("invalid %s %s: early takeover no longer breaks with a period — a follower breaks the lease at once (period 0), conditioned on the leader's record, once that record has been unchanged for %s (docs/failover.md#early-takeover); remove %s", flagRef("break-period"), t.breakPeriod, flagRef("takeover-after"), flagRef("break-period"))
	}
	return nil
}

// finish refuses what this build cannot do, defaults the identity and
// checks every rule, after parse, in the order a refusal names them: the
// election's, storage and control flags, then modeRules (the mode's own
// flags), then the identity as a history blob name and the process's flags
// (listen, token timeout, log format). That storage is set at all is asked
// by each command after all of its rules (requireStorage).
func (o *options) finish(fs *cmdFlags, modeRules ...func() error) error {
	if err := o.build.check(); err != nil {
		return err
	}
	if err := o.applyProfile(fs); err != nil {
		return err
	}
	if !fs.set("identity") {
		host, _ := os.Hostname()
		o.identity = fmt.Sprintf("%s-%d", host, os.Getpid())
	}
	checks := append([]func() error{o.takeover.validate, o.validateElection, o.storageOptions.validate, o.validateControl}, modeRules...)
	for _, check := range append(checks, o.validateHistoryNames, o.validateProcess) {
		if err := check(); err != nil {
			return err
		}
	}
	return nil
}

// finish is the shared finish with the worker's own rules: the pool's size
// and blob names in their place, then the leader task's timing.
func (o *workerOptions) finish(fs *cmdFlags) error {
	if err := o.options.finish(fs, o.validateShards, o.validateShardNames); err != nil {
		return err
	}
	if o.tick < 10*time.Millisecond || o.tick > time.Hour {
		return usagef("invalid %s %s: must be between 10ms and 1h", flagRef("tick"), o.tick)
	}
	if err := o.validateTick(); err != nil {
		return err
	}
	if err := o.validateShardTimings(); err != nil {
		return err
	}
	return o.requireStorage()
}

func (o *options) validateElection() error {
	if err := o.electionConfig().Validate(); err != nil {
		return configUsage(err, electionFlags)
	}
	return nil
}

func (o *options) validateProcess() error {
	if _, _, err := net.SplitHostPort(o.listen); err != nil {
		return usagef("invalid %s %q: must be host:port or :port, e.g. :8080 or 127.0.0.1:8080", flagRef("listen"), o.listen)
	}
	switch {
	case o.tokenTimeout < time.Second:
		return usagef("invalid %s %s: must be at least 1s", flagRef("token-timeout"), o.tokenTimeout)
	case o.logFormat != "auto" && o.logFormat != "text" && o.logFormat != "json":
		return usagef("invalid %s %q: must be auto, text or json", flagRef("log-format"), o.logFormat)
	}
	return nil
}

func (o *workerOptions) validateShards() error {
	if o.shards < 0 || o.shards > shard.MaxShards {
		return usagef("invalid %s %d: must be between 1 and %d (0 or absent: single-task mode)", flagRef("shards"), o.shards, shard.MaxShards)
	}
	return nil
}

// withoutQuery is an address as it may be shown: its query, which can
// carry a SAS signature, elided.
func withoutQuery(address string) string {
	if before, _, found := strings.Cut(address, "?"); found {
		return before + "?…"
	}
	return address
}

// Azure container names: 3–63 characters, lowercase letters, digits and
// single hyphens, starting and ending with a letter or digit.
var containerName = regexp.MustCompile(`^[a-z0-9]([a-z0-9]|-[a-z0-9]){1,62}$`)

// validate checks the storage flags' values; that storage is set at all is
// requireStorage's, which every command asks last, after every flag's own
// rules (a flag's own refusal would otherwise hide behind "no storage").
func (s *storageOptions) validate() error {
	connFlag := any(flagRef("connection-string"))
	if s.connectionString == "" && s.accountURL == "" {
		if s.connectionString = os.Getenv("AZURE_STORAGE_CONNECTION_STRING"); s.connectionString != "" {
			connFlag = "AZURE_STORAGE_CONNECTION_STRING (for --connection-string)"
		}
	}
	switch {
	case s.connectionString != "" && s.accountURL != "":
		return usagef("%s and %s are exclusive: set one", flagRef("account-url"), flagRef("connection-string"))
	case len(s.container) < 3 || len(s.container) > 63 || !containerName.MatchString(s.container):
		return usagef("invalid %s %q: must be 3–63 lowercase letters, digits and single hyphens, starting and ending with a letter or digit", flagRef("container"), s.container)
	case s.blob == "" || len(s.blob) > 900:
		return usagef("invalid %s %q: must be 1–900 characters", flagRef("blob"), s.blob)
	}
	if err := storage.CheckBlobName(s.blob); err != nil {
		return usagef("invalid %s %q: must %v", flagRef("blob"), s.blob, err)
	}
	if s.storageDial != "" {
		if err := dialer.Validate(s.storageDial); err != nil {
			return usagef("invalid %s %q: must be host:port, e.g. 127.0.0.1:10443", flagRef("storage-dial"), s.storageDial)
		}
	}
	if s.accountURL != "" {
		shown := withoutQuery(s.accountURL) // a query can carry a SAS signature
		u, err := url.Parse(s.accountURL)
		switch {
		case err != nil || u.Scheme != "https" || u.Host == "" || (u.Path != "" && u.Path != "/"):
			return usagef("invalid %s %q: must be https://<account>.blob.<suffix> with no path", flagRef("account-url"), shown)
		case u.RawQuery != "" || u.ForceQuery:
			return usagef("invalid %s %q: must have no query: %s signs in with Microsoft Entra ID (keyless); a SAS goes into %s (BlobEndpoint=https://…;SharedAccessSignature=…)", flagRef("account-url"), shown, flagRef("account-url"), flagRef("connection-string"))
		}
	}
	if s.connectionString != "" {
		// Build (not use) a client: catches a malformed string or key now.
		_, err := bloblock.NewContainerClient(bloblock.ClientConfig{ConnectionString: s.connectionString, Container: s.container})
		var bad *bloblock.ConnectionStringError
		switch {
		case errors.As(err, &bad):
			return usagef("invalid %s: malformed connection string: %s", connFlag, bad.Problem)
		case err != nil:
			return usagef("invalid %s: %v", connFlag, err)
		}
	}
	return nil
}

// requireStorage refuses a command with no storage set: neither
// --account-url nor --connection-string nor AZURE_STORAGE_CONNECTION_STRING
// (which validate, called first, reads). Every command asks it after all
// its other rules.
func (s *storageOptions) requireStorage() error {
	if s.connectionString == "" && s.accountURL == "" {
		return usagef("no storage: set %s (Azure, keyless) or %s (Azurite)", flagRef("account-url"), flagRef("connection-string"))
	}
	return nil
}

// validateControl: the control endpoint can stop the worker, so nothing off
// the host may reach it (control.go).
func (o *options) validateControl() error {
	if o.controlListen == "" {
		return nil
	}
	host, port, err := net.SplitHostPort(o.controlListen)
	n, perr := strconv.Atoi(port)
	if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsLoopback() || perr != nil || n < 0 || n > 65535 {
		return usagef("invalid %s %q: must be a loopback IP and port, e.g. 127.0.0.1:8081 (the endpoint can stop the worker, so nothing off the host may reach it)", flagRef("control-listen"), o.controlListen)
	}
	return nil
}

// The identity becomes part of a blob name in some modes; there it must be
// a name storage keeps as written (docs/architecture.md#names). Elsewhere it
// is only metadata. --blob itself is checked with the storage flags.

// validateHistoryNames: with --history blob the identity is the prefix
// <identity>/ of the history blobs.
func (o *options) validateHistoryNames() error {
	if o.history != "blob" {
		return nil
	}
	if err := storage.CheckBlobName(o.identity); err != nil {
		return usagef("invalid %s %q: with %s blob it names the history blobs <identity>/…, so it must %v", flagRef("identity"), o.identity, flagRef("history"), err)
	}
	return nil
}

// validateShardNames: in shard mode the identity names the member and
// report blobs <blob>-shards/members/<identity> and .../reports/<identity>.
func (o *workerOptions) validateShardNames() error {
	if o.shards == 0 {
		return nil
	}
	l := shard.Layout{Blob: o.blob}
	for _, name := range []string{l.Member(o.identity), l.Report(o.identity)} {
		if len(name) > storage.MaxBlobName {
			return usagef("invalid %s %q (%d bytes) with %s %q (%d bytes): in %s mode the member blob <blob>-shards/members/<identity> is %d bytes; Azure allows at most %d: shorten either", flagRef("identity"), o.identity, len(o.identity), flagRef("blob"), o.blob, len(o.blob), flagRef("shards"), len(name), storage.MaxBlobName)
		}
		if err := storage.CheckBlobName(name); err != nil {
			return usagef("invalid %s %q: in %s mode it names the blob %q, which must %v", flagRef("identity"), o.identity, flagRef("shards"), name, err)
		}
	}
	return nil
}

// The stall watchdog steps a leader down when its task reports no progress
// (work that landed) for --watchdog-timeout; a task that can report less
// often than that, with every step succeeding, would be deposed by its own
// watchdog every few seconds.

// validateTick checks --tick against the watchdog, for the worker's ledger
// task and for every shard task. Both report progress when an append lands:
// one append per tick, each bounded by two request timeouts (task.go), so
// on storage that answers just within the timeout two landed appends are up
// to --tick + 2 × request timeout apart, and a gap that long must not look
// like a stall.
func (o *workerOptions) validateTick() error {
	if o.watchdogTimeout == 0 {
		return nil
	}
	rt := o.electionConfig().RequestTimeout()
	if gap := o.tick + 2*rt; gap >= o.watchdogTimeout {
		tick, watchdog := flagRef("tick"), flagRef("watchdog-timeout")
		return usagef("invalid %s %s with %s %s: the leader task reports progress once per ledger append that lands, one per tick, each up to 2 × the request timeout %s, so %s + 2 × request timeout = %s must be less than %s, or its own watchdog steps every leader down; lower %s or raise %s (0 disables it)",
			tick, o.tick, watchdog, o.watchdogTimeout, rt, tick, gap, watchdog, tick, watchdog)
	}
	return nil
}

// validateShardTimings checks what shard mode adds: the coordinator
// reports progress when a pass confirms or publishes the assignment (after
// its listing) and when it publishes the summary, one pass per jittered poll
// period (up to 1.1 × --retry-period), each storage step of a pass bounded
// by the request timeout: a steady pool reports at most 1.1 × --retry-period
// + 2 × request timeout apart.
func (o *workerOptions) validateShardTimings() error {
	if o.shards == 0 || o.watchdogTimeout == 0 {
		return nil
	}
	rt := o.electionConfig().RequestTimeout()
	need := o.timing.RetryPeriod*11/10 + 2*rt
	if need > o.watchdogTimeout {
		retry, watchdog := flagRef("retry-period"), flagRef("watchdog-timeout")
		return usagef("invalid %s %s with %s %s in shard mode: the coordinator reports progress once per pass that confirms or publishes the assignment, one pass every 1.1 × %s, each step up to the request timeout (%s), so 1.1 × %s + 2 × request timeout (%s) must be at most %s; lower %s or raise %s (0 disables it)",
			retry, o.timing.RetryPeriod, watchdog, o.watchdogTimeout, retry, rt, retry, need, watchdog, retry, watchdog)
	}
	return nil
}

// electionConfig is the election's configuration from the shared flags.
func (o *options) electionConfig() election.Config {
	c := election.DefaultConfig(o.identity)
	c.Timing = o.timing
	c.WatchdogTimeout, c.ShutdownGrace = o.watchdogTimeout, o.shutdownGrace
	c.TakeoverAfter = o.takeover.takeoverAfter
	o.build.configure(&c)
	return c
}

// The election modes the binary publishes in the lock's record; a follower
// that reads another reports the conflict
// (docs/architecture.md#conflicting-set-ups).
const (
	modeWorker = "worker"
	modeRun    = "run"
)

// electionConfig is the worker's election: the shared one, published as
// the single-task worker's mode or its shard pool's.
func (o *workerOptions) electionConfig() election.Config {
	c := o.options.electionConfig()
	c.Mode = modeWorker
	if o.shards > 0 {
		c.Mode = shard.Mode(o.shards)
	}
	return c
}

// electionFlags are the flags that set the election's fields: the field
// names a *election.ConfigError carries, as flag names.
var electionFlags = map[string]string{
	"Identity": "identity", "LeaseDuration": "lease-duration", "RenewDeadline": "renew-deadline",
	"RenewInterval": "renew-interval", "RetryPeriod": "retry-period",
	"WatchdogTimeout": "watchdog-timeout", "ShutdownGrace": "shutdown-grace",
	"TakeoverAfter": "takeover-after",
}

// configUsage turns a library config error into a usage error that names
// the flag, the value and the rule, every field in it shown as the flag
// that sets it (flags: field → flag name).
func configUsage(err error, flags map[string]string) error {
	var ce *election.ConfigError
	if !errors.As(err, &ce) {
		return usagef("%v", err)
	}
	subject := any(ce.Field)
	if flag, ok := flags[ce.Field]; ok {
		subject = flagRef(flag)
	}
	return usagef("invalid %s %s: %s", subject, ce.Value, configRule{err: ce, flags: flags})
}
