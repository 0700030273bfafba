package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/blobleader/blobleader/worker/azuritetest"
	"github.com/blobleader/blobleader/worker/election"
)

// expectUsageError runs the binary and asserts exit 2 with a one-line
// message naming want.
func expectUsageError(t *testing.T, env []string, want string, args ...string) string {
	t.Helper()
	// If the check is missing, the worker would start: keep it off well-known ports.
	args = append(args, "--listen=127.0.0.1:0")
	code, out := runWorkerCmd(t, append([]string{"AZURE_STORAGE_CONNECTION_STRING="}, env...), args...)
	if code != 2 {
		t.Fatalf("exit code %d, want 2; output:\n%s", code, out)
	}
	if lines := strings.Split(strings.TrimSpace(out), "\n"); len(lines) != 1 {
		t.Fatalf("want a one-line message, got %d lines:\n%s", len(lines), out)
	}
	if !strings.Contains(out, want) {
		t.Fatalf("message does not name %s:\n%s", want, out)
	}
	return out
}

// An identity is written to the lock blob's metadata, an HTTP header: one
// that storage cannot carry would make a worker that acquires, fails the
// term write, releases and polls for ever. It is a configuration error.
func TestWorker_IdentityStorageCannotCarryExitsTwo(t *testing.T) {
	t.Parallel()
	conn := "--connection-string=" + goodConn
	tests := []struct {
		name string
		env  []string
		args []string
		rule string // a word of the rule the message must state
	}{
		{"non-ASCII", nil, []string{conn, "--identity", "wörker-ü"}, "ASCII"},
		{"non-ASCII from the env twin", []string{"BLOBLEADER_IDENTITY=wörker-ü"}, []string{conn}, "ASCII"},
		{"trailing space", nil, []string{conn, "--identity", "w1 "}, "space"},
		{"control character", nil, []string{conn, "--identity", "w1\x01"}, "ASCII"},
		{"longer than the bound", nil, []string{conn, "--identity", strings.Repeat("w", election.MaxIdentityLength+1)}, fmt.Sprint(election.MaxIdentityLength)},
		{"beyond Azure's 8 KiB of metadata", nil, []string{conn, "--identity", strings.Repeat("w", 9000)}, "8 KiB"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			out := expectUsageError(t, tt.env, "--identity", tt.args...)
			if !strings.Contains(out, tt.rule) {
				t.Fatalf("message does not state the rule (%q):\n%s", tt.rule, out)
			}
		})
	}
}

// The rule is not stricter than it needs to be in the other direction
// either: the longest identity it accepts, of every printable ASCII
// character with runs of inner spaces, makes a leader that a follower names
// exactly (it round-trips through the lock's metadata on Azurite).
func TestWorker_IdentityAtTheEdgeOfTheRuleRoundTrips(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	for c := byte('!'); c <= '~'; c++ {
		b.WriteByte(c)
		if c%17 == 0 {
			b.WriteString("   ")
		}
	}
	id := b.String()
	for len(id) < election.MaxIdentityLength {
		id += b.String()
	}
	id = id[:election.MaxIdentityLength-1] + "z" // no trailing space
	az := azuritetest.StartT(t)
	dir := t.TempDir()
	leaderURL, _ := startWorker(t, az.ConnectionString(), id, filepath.Join(dir, "a.jsonl"))
	awaitRole(t, leaderURL, "leader")
	if st := getStatus(t, leaderURL); st["identity"] != id {
		t.Fatalf("/status identity = %q, want %q", st["identity"], id)
	}
	followerURL, _ := startWorker(t, az.ConnectionString(), "edge-follower", filepath.Join(dir, "b.jsonl"))
	waitFor(t, fmt.Sprintf("the follower naming the %d-byte identity %q as leader", len(id), id), 10*time.Second, func() (bool, string) {
		got := getStatus(t, followerURL)["leader"]
		return got == id, fmt.Sprintf("leader %q", got)
	})
}

// Flags that are each in range but cannot work together are a configuration
// error naming both flags and the rule, in every mode: a leader stepped down
// by its own watchdog every few seconds, or a storage call capped below what
// real storage answers in, would otherwise run (and flap, or never lead)
// with /healthz green.
func TestWorker_FlagCombinationsThatCannotWorkExitTwoNamingBoth(t *testing.T) {
	t.Parallel()
	conn := "--connection-string=" + goodConn
	tests := []struct {
		name string
		args []string
		want []string // both flags and a word of the rule
	}{
		{"worker: tick above the watchdog", []string{conn, "--tick=30s"}, []string{"--tick", "--watchdog-timeout", "reports progress"}},
		{"worker: an append's timeout above the watchdog", []string{conn, "--watchdog-timeout=3s"}, []string{"--tick", "--watchdog-timeout", "request timeout"}},
		{"worker: a tick plus an append's timeout above the watchdog", []string{conn, "--tick=7s"}, []string{"--tick", "--watchdog-timeout", "request timeout"}},
		{"shards: a tick plus an append's timeout above the watchdog", []string{conn, "--shards=4", "--tick=7s"}, []string{"--tick", "--watchdog-timeout", "request timeout"}},
		{"worker: request timeout below what storage answers in", []string{conn, "--renew-interval=50ms"}, []string{"--renew-interval", "--renew-deadline", "request timeout"}},
		{"worker: request timeout from the deadline below the floor", []string{conn, "--renew-deadline=1200ms", "--renew-interval=400ms"}, []string{"--renew-interval", "--renew-deadline", "request timeout"}},
		{"shards: tick above the watchdog", []string{conn, "--shards=4", "--tick=30s"}, []string{"--tick", "--watchdog-timeout"}},
		{"shards: poll period above the watchdog", []string{conn, "--shards=4", "--retry-period=20s"}, []string{"--retry-period", "--watchdog-timeout", "coordinator"}},
		{"shards: request timeout below the floor", []string{conn, "--shards=4", "--renew-interval=50ms"}, []string{"--renew-interval", "--renew-deadline"}},
		{"run: request timeout below the floor", []string{"run", conn, "--renew-interval=50ms", "--", "/bin/true"}, []string{"--renew-interval", "--renew-deadline", "request timeout"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			out := expectUsageError(t, nil, tt.want[0], withListen(tt.args)...)
			for _, w := range tt.want[1:] {
				if !strings.Contains(out, w) {
					t.Fatalf("message does not name %q:\n%s", w, out)
				}
			}
		})
	}
}

// withListen puts --listen before run's "--" (expectUsageError appends it).
func withListen(args []string) []string {
	if len(args) > 0 && args[0] == "run" {
		for i, a := range args {
			if a == "--" {
				out := append([]string{}, args[:i]...)
				out = append(out, "--listen=127.0.0.1:0")
				return append(out, args[i:]...)
			}
		}
	}
	return args
}

func TestWorker_TakeoverFlagsExitTwoNamingTheRule(t *testing.T) {
	t.Parallel()
	conn := "--connection-string=" + goodConn
	fast := []string{conn, "--renew-deadline=1500ms", "--renew-interval=500ms", "--retry-period=500ms"}
	tests := []struct {
		name string
		env  []string
		args []string
		want []string // each must appear in the message
	}{
		{"T below the holder's horizon + margin", nil, append(fast, "--takeover-after=2s"), []string{"--takeover-after 2s", "--renew-deadline + request timeout + 250ms (2.25s)"}},
		{"T below the default deadline's horizon", nil, []string{conn, "--takeover-after=6s"}, []string{"--takeover-after 6s", "(12.25s)"}},
		{"T not below L", nil, []string{conn, "--takeover-after=15s"}, []string{"--takeover-after 15s", "less than --lease-duration"}},
		{"env twin", []string{"BLOBLEADER_TAKEOVER_AFTER=900ms"}, fast, []string{"BLOBLEADER_TAKEOVER_AFTER (--takeover-after)"}},
		{"a break period: the previous design's", nil, append(fast, "--takeover-after=2250ms", "--break-period=4s"), []string{"--break-period 4s", "remove --break-period"}},
		{"a break period from the environment", []string{"BLOBLEADER_BREAK_PERIOD=4s"}, fast, []string{"BLOBLEADER_BREAK_PERIOD (--break-period) 4s"}},
		{"run: the kill grace leaves no heartbeat cycle", nil, append([]string{"run"}, append(fast, "--takeover-after=2250ms", "--kill-grace=600ms", "--", "true")...),
			[]string{"--kill-grace 600ms", "--renew-deadline − --kill-grace (900ms) must be at least --renew-interval + request timeout (1s)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			expectUsageSaying(t, tt.env, tt.want, tt.args...)
		})
	}
}

// expectUsageSaying is expectUsageError for a message that must say each of
// want.
func expectUsageSaying(t *testing.T, env, want []string, args ...string) {
	t.Helper()
	out := expectUsageError(t, env, want[0], args...)
	for _, w := range want[1:] {
		if !strings.Contains(out, w) {
			t.Fatalf("message does not say %q:\n%s", w, out)
		}
	}
}

// --break-period 0 (the previous design's default, which deployments spelled
// out) is accepted and does nothing: the refusal below is --log-format's,
// the rule checked after the election's.
func TestWorker_BreakPeriodZeroIsStillAccepted(t *testing.T) {
	t.Parallel()
	code, out := runWorkerCmd(t, []string{"AZURE_STORAGE_CONNECTION_STRING=", "BLOBLEADER_BREAK_PERIOD=0s"},
		"--connection-string="+goodConn, "--profile=fast", "--break-period=0", "--log-format=bogus")
	if code != 2 || !strings.Contains(out, "--log-format") {
		t.Fatalf("exit %d, want 2 for --log-format only (--break-period 0 accepted):\n%s", code, out)
	}
}

// --profile NAME (env BLOBLEADER_PROFILE) supplies the timing flags not
// given; explicit flags and env twins override it; a bad name, or a
// combination the overrides make invalid, exits 2 naming the flag, the rule,
// the value, and what the profile set.
func TestWorker_ProfileRefusalsExitTwoNamingTheRule(t *testing.T) {
	t.Parallel()
	conn := "--connection-string=" + goodConn
	tests := []struct {
		name string
		env  []string
		args []string
		want []string
	}{
		{"unknown profile", nil, []string{conn, "--profile=fastest"}, []string{`invalid --profile "fastest": must be one of default, fast`}},
		{"unknown profile from the environment", []string{"BLOBLEADER_PROFILE=quick"}, []string{conn}, []string{`BLOBLEADER_PROFILE (--profile) "quick"`}},
		{"fast, but a longer deadline", nil, []string{conn, "--profile=fast", "--renew-deadline=3s"},
			[]string{"invalid --takeover-after 2.25s", "(3.75s)", "(--profile fast set --renew-interval 500ms, --takeover-after 2.25s)"}},
		{"fast from the environment, a longer deadline on the command line", []string{"BLOBLEADER_PROFILE=fast"}, []string{conn, "--renew-deadline=3s"},
			[]string{"invalid --takeover-after 2.25s", "(BLOBLEADER_PROFILE (--profile) fast set --renew-interval 500ms, --takeover-after 2.25s)"}},
		{"run fast with the default kill grace given", nil, []string{"run", conn, "--profile=fast", "--kill-grace=1s", "--", "true"},
			[]string{"invalid --kill-grace 1s", "--renew-deadline − --kill-grace (500ms)", "(--profile fast set --renew-deadline 1.5s"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			expectUsageSaying(t, tt.env, tt.want, tt.args...)
		})
	}
}

// What each profile sets, and that a flag given beats it.
func TestParseOptions_ProfileSetsTheUnsetTimingFlags(t *testing.T) {
	conn := "--connection-string=" + goodConn
	fast := election.FastConfig("")
	for _, tc := range []struct {
		name string
		args []string
		want election.Timing
		T    time.Duration
	}{
		{"no profile: the defaults", []string{conn}, election.DefaultTiming(), 0},
		{"default", []string{conn, "--profile=default"}, election.DefaultTiming(), 0},
		{"fast", []string{conn, "--profile=fast"}, fast.Timing, 2250 * time.Millisecond},
		{"fast, retry period given", []string{conn, "--profile=fast", "--retry-period=1s"},
			election.Timing{LeaseDuration: 15 * time.Second, RenewDeadline: 1500 * time.Millisecond, RenewInterval: 500 * time.Millisecond, RetryPeriod: time.Second}, 2250 * time.Millisecond},
		{"fast, early takeover switched off", []string{conn, "--profile=fast", "--takeover-after=0"}, fast.Timing, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, err := parseOptions(append(tc.args, "--listen=127.0.0.1:0"), new(strings.Builder))
			if err != nil {
				t.Fatalf("parseOptions: %v", err)
			}
			if o.timing != tc.want || o.takeover.takeoverAfter != tc.T {
				t.Fatalf("timing %+v, takeover-after %v; want %+v, %v", o.timing, o.takeover.takeoverAfter, tc.want, tc.T)
			}
		})
	}
}

func TestParseRunOptions_FastProfileMovesTheKillGraceInside(t *testing.T) {
	o, err := parseRunOptions([]string{"--connection-string=" + goodConn, "--listen=127.0.0.1:0", "--profile=fast", "--", "true"}, new(strings.Builder))
	if err != nil {
		t.Fatalf("parseRunOptions: %v", err)
	}
	if o.killGrace != 250*time.Millisecond || !o.graceInside() {
		t.Fatalf("run --profile fast: kill grace %v, grace inside %v; want 250ms inside the leadership", o.killGrace, o.graceInside())
	}
	if c := o.electionConfig(); c.StopAfterDeadline != 0 || c.TakeoverAfter != 2250*time.Millisecond {
		t.Fatalf("run --profile fast publishes StopAfterDeadline %v and T %v; want 0 (SIGKILL by the deadline) and 2.25s", c.StopAfterDeadline, c.TakeoverAfter)
	}
}

// Names that storage would not keep as written are refused at start (exit
// 2, one line naming the flag, the rule and the value): a backslash (stored
// as "/"), a path segment ending in a dot (Azure drops it; Azurite keeps
// it), empty path segments, and a blob name longer than Azure's 1,024. The
// identity is only checked where it becomes part of a blob name: shard mode
// (member and report blobs) and --history blob.
func TestWorker_NamesStorageWouldRewriteExitTwo(t *testing.T) {
	t.Parallel()
	conn := "--connection-string=" + goodConn
	long := strings.Repeat("b", 900)
	id200 := strings.Repeat("i", 200)
	for _, tc := range []struct {
		name string
		env  []string
		args []string
		want []string // each must appear in the one-line message
	}{
		{"backslash in --blob", nil, []string{conn, `--blob=pool\leader`}, []string{"--blob", `"pool\\leader"`, `"\\"`}},
		{"trailing dot in --blob", nil, []string{conn, "--blob=leader."}, []string{"--blob", `"leader."`, "dot"}},
		{"segment ending in a dot in --blob", nil, []string{conn, "--blob=pool./leader"}, []string{"--blob", "dot"}},
		{"empty segment in --blob", nil, []string{conn, "--blob=pool//leader"}, []string{"--blob", "empty"}},
		{"leading slash in --blob", nil, []string{conn, "--blob=/leader"}, []string{"--blob", "empty"}},
		{"control character in --blob", nil, []string{conn, "--blob=lea\tder"}, []string{"--blob", "control"}},
		{"env twin of --blob", []string{`BLOBLEADER_BLOB=pool\leader`}, []string{conn}, []string{"--blob", `"\\"`}},
		{"ledger subcommand", nil, []string{"ledger", conn, `--blob=pool\leader`}, []string{"--blob", `"\\"`}},
		{"backslash in a shard member's identity", nil, []string{conn, "--shards=4", `--identity=DOMAIN\host`}, []string{"--identity", `"DOMAIN\\host"`, "--shards", `"\\"`}},
		{"trailing dot in a shard member's identity", nil, []string{conn, "--shards=4", "--identity=host.example."}, []string{"--identity", "--shards", "dot"}},
		{"member blob longer than Azure allows", nil, []string{conn, "--shards=4", "--blob=" + long, "--identity=" + id200}, []string{"--identity", "--blob", "1024", "1116"}},
		{"backslash in the identity with --history blob", nil, []string{conn, "--history=blob", `--identity=DOMAIN\host`}, []string{"--identity", "--history blob", `"\\"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			env := append([]string{"AZURE_STORAGE_CONNECTION_STRING="}, tc.env...)
			code, out := runWorkerCmd(t, env, tc.args...)
			if code != 2 {
				t.Fatalf("exit %d, want 2:\n%s", code, out)
			}
			if lines := strings.Count(strings.TrimSpace(out), "\n") + 1; lines != 1 {
				t.Fatalf("%d lines, want one:\n%s", lines, out)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Fatalf("message does not say %q:\n%s", w, out)
				}
			}
		})
	}
}

// The identity is free where it names no blob: in single-task mode it is
// only the lock's holder metadata (a header value), so DOMAIN\host and a
// trailing dot are fine there; so are names storage keeps as written.
func TestWorker_NamesStorageKeepsAreAccepted(t *testing.T) {
	t.Parallel()
	conn := "--connection-string=" + goodConn
	for _, args := range [][]string{
		{conn, `--identity=DOMAIN\host`},
		{conn, "--identity=host.example."},
		{conn, "--shards=4", "--identity=DOMAIN.host-1"},
		{conn, "--shards=4", "--blob=pools/eu.west/leader", "--identity=ns/host-1"},
		{conn, "--shards=4", "--blob=" + strings.Repeat("b", 900), "--identity=" + strings.Repeat("i", 108)},
	} {
		if _, err := parseOptions(args, new(strings.Builder)); err != nil {
			t.Errorf("parseOptions(%q) = %v, want accepted", args[1:], err)
		}
	}
}

// --help states the watchdog's real rules, not only the library's: the
// worker refuses a timeout a healthy leader's ledger appends could outlast.
func TestWorker_HelpStatesTheWatchdogRule(t *testing.T) {
	t.Parallel()
	code, stdout, _ := runBinary(t, nil, "--help")
	_, usage, _ := strings.Cut(stdout, "--watchdog-timeout\n")
	usage, _, _ = strings.Cut(usage, "\n")
	if code != 0 || !strings.Contains(usage, "--tick + 2 × request timeout") || !strings.Contains(usage, "--renew-interval") {
		t.Fatalf("--help on --watchdog-timeout says %q; want its rules: ≥ --renew-interval, more than --tick + 2 × request timeout", usage)
	}
}

// Storage addresses that could only fail once running are refused at start
// (exit 2, naming the flag, the rule and the value), and the value shown
// never carries a signature or a key.
func TestWorker_StorageAddressesThatCannotWorkExitTwoWithoutSecrets(t *testing.T) {
	t.Parallel()
	const sig, key = "c2VjcmV0LXNpZ25hdHVyZQ", "a2V5LWtleS1rZXkta2V5LWtleQ=="
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"account url with a SAS", []string{"--account-url", "https://acct.blob.core.windows.net/?sv=2022-11-02&sp=rwdl&sig=" + sig},
			[]string{"--account-url", "https://acct.blob.core.windows.net/?", "SAS", "--connection-string"}},
		{"http account url with a SAS", []string{"--account-url", "http://acct.blob.core.windows.net/?sv=2022-11-02&sig=" + sig},
			[]string{"--account-url", "https"}},
		{"blob endpoint without a scheme", []string{"--connection-string", "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=" + key + ";BlobEndpoint=127.0.0.1:10000/devstoreaccount1;"},
			[]string{"--connection-string", "BlobEndpoint", `"127.0.0.1:10000/devstoreaccount1"`, "http://"}},
		{"blob endpoint with a SAS and no scheme", []string{"--connection-string", "BlobEndpoint=acct.blob.core.windows.net/?sv=2022-11-02&sig=" + sig + ";SharedAccessSignature=sv=2022-11-02&sig=" + sig},
			[]string{"--connection-string", "BlobEndpoint", "http://"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			// No credential reaches a metadata endpoint, whatever the code does.
			env := []string{"AZURE_STORAGE_CONNECTION_STRING=", "AZURE_TOKEN_CREDENTIALS=NoSuchCredential"}
			code, stdout, stderr := runBinary(t, env, append(tc.args, "--listen", "127.0.0.1:0")...)
			requireOneLineUsage(t, code, stdout, stderr, tc.want...)
			if strings.Contains(stderr, sig) || strings.Contains(stderr, key) {
				t.Fatalf("the refusal shows a secret:\n%s", stderr)
			}
		})
	}
}
