package election

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strconv"
	"time"
)

// Bounds on the lease duration that Azure Storage (and Azurite) accept.
// Infinite leases (-1) are refused on purpose: a crashed holder would block
// the election forever.
const (
	MinLeaseDuration = 15 * time.Second
	MaxLeaseDuration = 60 * time.Second
	// SafetyMargin is how much shorter than the lease the renew deadline must be:
	// room for clock-rate drift between us and storage and for request transit.
	SafetyMargin = 2 * time.Second
	// minRequestTimeout is the least request timeout (Config.RequestTimeout)
	// real storage can be asked to meet. Every storage call carries it —
	// acquire, the term write, renew, the first token fetch of a keyless
	// identity on a fresh TLS connection — and Azure's SLA gives a blob
	// operation up to 2s; an in-region call takes tens of milliseconds, a
	// token fetch plus a TLS handshake hundreds. Far below that the first
	// acquire would time out every time against real Azure: a fleet that
	// never leads. 500ms is the fast profile's (docs/architecture.md#the-election).
	minRequestTimeout = 500 * time.Millisecond
	// minRetryPeriod is the shortest follower poll period P. Every follower
	// polls the one lock blob, and Azure's scalability target for a single
	// blob is 500 requests a second, beyond which it throttles (503
	// ServerBusy) — the leader's renews included. At 500ms a follower sends
	// at most 1/(0.9·P) ≈ 2.2 requests a second, so ~200 contenders stay
	// inside the target beside the leader. A poll also waits for its own
	// answer, which may take up to the request timeout (minRequestTimeout,
	// 500ms): polling faster than that buys no failover time. 500ms is the
	// fast profile's.
	minRetryPeriod = 500 * time.Millisecond
)

// MaxIdentityLength bounds Config.Identity, in bytes. The identity is stored
// as the lock blob's "holder" metadata value, and Azure allows 8 KiB for all
// of a blob's metadata names and values together; 256 bytes leaves the rest
// (term, acquired, and whatever a later version adds) far inside that bound,
// and is longer than any host name (253) plus a pid.
const MaxIdentityLength = 256

// maxModeLength bounds Config.Mode, in bytes (stored as the lock blob's
// "mode" metadata value).
const maxModeLength = 64

// Timing holds the election's four timing parameters. It is their one
// definition: the worker's flags, the test harness's clusters and the history
// checker all carry a Timing, so that they cannot disagree on a field or on
// a rule derived from them (docs/architecture.md#the-election).
type Timing struct {
	// LeaseDuration L is the lease storage grants on acquire and renew.
	// Whole seconds, 15s–60s; default 15s.
	LeaseDuration time.Duration

	// RenewDeadline D: the leader steps down when D has passed since the send
	// time of its last successful renew. Must be < LeaseDuration − 2s; default 10s.
	RenewDeadline time.Duration

	// RenewInterval is how often the leader renews. At most RenewDeadline/3, so
	// at least three attempts fit in a deadline; default 2s.
	RenewInterval time.Duration

	// RetryPeriod P is the follower's acquire poll period, jittered ±10%.
	// At least 500ms; default 1s.
	RetryPeriod time.Duration
}

// DefaultTiming returns the defaults: L 15s, D 10s, renew every 2s, P 1s.
func DefaultTiming() Timing {
	return Timing{
		LeaseDuration: 15 * time.Second,
		RenewDeadline: 10 * time.Second,
		RenewInterval: 2 * time.Second,
		RetryPeriod:   1 * time.Second,
	}
}

// RequestTimeout is the deadline every storage call carries:
// min(RenewInterval, RenewDeadline/3).
func (t Timing) RequestTimeout() time.Duration {
	return min(t.RenewInterval, t.RenewDeadline/3)
}

// withinRequestTimeout runs one storage operation with the request timeout
// as its deadline.
func (t Timing) withinRequestTimeout(ctx context.Context, op func(context.Context) error) error {
	rctx, cancel := context.WithTimeout(ctx, t.RequestTimeout())
	defer cancel()
	return op(rctx)
}

// JitteredRetryPeriod is one follower poll wait: RetryPeriod ±10%, so that
// followers do not hit storage in step.
func (t Timing) JitteredRetryPeriod() time.Duration {
	return time.Duration(float64(t.RetryPeriod) * (0.9 + 0.2*rand.Float64()))
}

// Config holds the election's parameters. Build it from DefaultConfig and
// override fields; NewElector validates it.
type Config struct {
	// Identity names this contender in the lock's metadata, in events and in
	// OnNewLeader. Required; the worker defaults it to <hostname>-<pid>.
	// Printable ASCII with no leading or trailing space, at most
	// MaxIdentityLength bytes: what storage can carry as a metadata value.
	Identity string

	// Timing is L, D, the renew interval and P; see Timing.
	Timing

	// Mode says what this contender does while it leads (the binary:
	// "worker", "run", "shards=8"). It is written into the lock's record with
	// every term, and a follower that reads a record written in another mode
	// reports the conflict (conflict.go). Empty: not written, never compared.
	// Printable ASCII with no leading or trailing space, at most 64 bytes.
	Mode string

	// WatchdogTimeout: a leader whose task reports no progress (Progress:
	// work that landed, not a loop that turned) for this long steps down and
	// releases; after each such leadership in a row without any progress the
	// elector waits twice as long before contending again, up to 4·L
	// (docs/architecture.md#the-election). 0 disables the watchdog; otherwise
	// it must be ≥ RenewInterval. Default 0 (the worker sets 10s).
	WatchdogTimeout time.Duration

	// ShutdownGrace bounds how long a step-down or a graceful stop waits for
	// the leader task to return after its context is cancelled. Default 5s.
	ShutdownGrace time.Duration

	// ObserveEvery: a follower reads the holder and term from the lock's
	// metadata on the first poll that finds the lock held and then every
	// ObserveEvery polls, to keep the storage operation budget low. Default 10.
	ObserveEvery int

	// ConfirmEvery: a leader with early takeover off writes a confirmation
	// (its heartbeat, under its lease) into the lock's record at least this
	// often, and publishes how often, so that followers can tell it from a
	// holder outside the election that keeps the lease and never writes the
	// record (confirm.go). 0 (the default) is off; otherwise at least
	// RenewInterval. The binary uses LeaseDuration/2. Early takeover's
	// heartbeat confirms on its own, every renew.
	ConfirmEvery time.Duration

	// TakeoverAfter T turns on early takeover (takeover.go,
	// docs/failover.md#early-takeover): a follower that reads the leader's
	// record unchanged for T on its own monotonic clock breaks the lease at
	// once (break period 0), conditioned on that record. 0 (the default) is
	// off. Otherwise at least RenewDeadline + the request timeout +
	// StopAfterDeadline + 250ms (the leader has stopped by then), 2 ×
	// RenewInterval and RenewInterval + 2 × the request timeout (a healthy
	// leader writes a heartbeat at least that often), and less than
	// LeaseDuration. A breaker waits at least what the holder published.
	TakeoverAfter time.Duration

	// StopAfterDeadline is how long after its renew deadline what a leader
	// started may still act, beyond a request in flight: 0 for the worker
	// (its task is cancelled at the deadline) and for `blobleader run` (its
	// command is SIGKILLed by the deadline). A leader with early takeover on
	// publishes RenewDeadline + request timeout + StopAfterDeadline with its
	// heartbeat, and a breaker waits at least that long (+ 250ms).
	StopAfterDeadline time.Duration

	// Logger receives the election's logs; nil means slog.Default(). The
	// election loop logs on its safety path (a failed renew, the step-down),
	// so the handler must not block on its output: the binary wraps its
	// handler in worker/boundedlog (docs/architecture.md#logs). Every
	// unexpected storage answer is logged at WARN with event=storage_error
	// (at most one line per operation and code per LeaseDuration; fields in
	// docs/architecture.md#log-lines-the-alerts-read).
	Logger *slog.Logger

	// claim is how long a leadership may be claimed and what ends it
	// (claim.go). Unexported: no library user can change it.
	claim claimRule
}

// DefaultConfig returns the defaults (docs/architecture.md#the-election) for
// the given identity.
func DefaultConfig(identity string) Config {
	return Config{
		Identity:      identity,
		Timing:        DefaultTiming(),
		ShutdownGrace: 5 * time.Second,
		ObserveEvery:  10,
	}
}

// FastConfig returns the fast profile (README, "Timing profiles";
// docs/failover.md#early-takeover) for the given identity: L 15s, D 1.5s,
// renew every 500ms, P 500ms (request timeout 500ms), and early takeover
// after 2.25s — D + request timeout + 250ms. A dead leader is replaced
// about 2.3s after its host is lost, instead of about a lease.
func FastConfig(identity string) Config {
	c := DefaultConfig(identity)
	c.Timing = Timing{
		LeaseDuration: 15 * time.Second,
		RenewDeadline: 1500 * time.Millisecond,
		RenewInterval: 500 * time.Millisecond,
		RetryPeriod:   500 * time.Millisecond,
	}
	c.TakeoverAfter = c.minTakeoverAfter()
	return c
}

// ErrInvalidConfig is wrapped by every *ConfigError.
var ErrInvalidConfig = errors.New("election: invalid config")

// ConfigError names the field that broke a rule, the rule and the value.
type ConfigError struct {
	Field string // Go field name, e.g. "RenewDeadline"
	Rule  string // e.g. "must be less than LeaseDuration − 2s (13s)"
	Value string // the offending value as given

	// format and args are Rule before formatting; the other fields the
	// rule names are fieldRef arguments (RuleNaming).
	format string
	args   []any
}

func (e *ConfigError) Error() string {
	return fmt.Sprintf("election: invalid config: %s = %s: %s", e.Field, e.Value, e.Rule)
}

// Unwrap lets callers test errors.Is(err, ErrInvalidConfig).
func (e *ConfigError) Unwrap() error { return ErrInvalidConfig }

// RuleNaming is Rule with every other field it names written as
// name(field): the binary shows "must be less than --lease-duration − 2s
// (13s)" where Rule says LeaseDuration.
func (e *ConfigError) RuleNaming(name func(field string) string) string {
	if e.format == "" {
		return e.Rule
	}
	args := make([]any, len(e.args))
	for i, a := range e.args {
		if f, ok := a.(fieldRef); ok {
			a = name(string(f))
		}
		args[i] = a
	}
	return fmt.Sprintf(e.format, args...)
}

// fieldRef is another field a rule names: an argument of its format.
type fieldRef string

func (f fieldRef) String() string { return string(f) }

// invalid is the *ConfigError for field, whose value v breaks rule (a
// format over args; fieldRef arguments name other fields).
func invalid(field string, v any, rule string, args ...any) *ConfigError {
	return &ConfigError{Field: field, Value: fmt.Sprint(v), Rule: fmt.Sprintf(rule, args...), format: rule, args: args}
}

// CheckIdentity returns nil if id can name a contender in a lock's record
// (Config.Identity's rule: not empty, printable ASCII with no leading or
// trailing space, at most MaxIdentityLength bytes), and otherwise a
// *ConfigError naming field (package mutex checks its Owner with it).
func CheckIdentity(field, id string) error {
	switch {
	case id == "":
		return invalid(field, `""`, "must not be empty")
	case len(id) > MaxIdentityLength:
		return invalid(field, fmt.Sprintf("(%d bytes)", len(id)), "must be at most %d bytes (it is stored in the lock blob's metadata, which Azure limits to 8 KiB in all)", MaxIdentityLength)
	case !storableInMetadata(id):
		return invalid(field, strconv.Quote(id), "must be printable ASCII (space to ~) with no leading or trailing space: it is stored as a metadata value, an HTTP header, which storage refuses otherwise")
	}
	return nil
}

// Validate checks every rule of docs/architecture.md#the-election and returns
// the first broken one as a *ConfigError. Fields are checked in dependency
// order (L, then D, then the renew interval) so the message points at the
// field to change.
func (c Config) Validate() error {
	if err := CheckIdentity("Identity", c.Identity); err != nil {
		return err
	}
	const (
		leaseDuration, renewDeadline, renewInterval = fieldRef("LeaseDuration"), fieldRef("RenewDeadline"), fieldRef("RenewInterval")
	)
	switch {
	case len(c.Mode) > maxModeLength || (c.Mode != "" && !storableInMetadata(c.Mode)):
		return invalid("Mode", strconv.Quote(c.Mode), "must be printable ASCII (space to ~) with no leading or trailing space, at most %d bytes: it is stored as a metadata value", maxModeLength)
	case c.LeaseDuration < MinLeaseDuration || c.LeaseDuration > MaxLeaseDuration:
		return invalid("LeaseDuration", c.LeaseDuration, "must be between %s and %s (the range Azure Storage accepts; infinite leases are refused)", MinLeaseDuration, MaxLeaseDuration)
	case c.LeaseDuration%time.Second != 0:
		// Storage grants whole seconds: 15.9s would be sent as 15s, while the
		// renew deadline's margin would be checked against 15.9s.
		return invalid("LeaseDuration", c.LeaseDuration, "must be a whole number of seconds (storage grants leases in whole seconds)")
	case c.RenewDeadline <= 0:
		return invalid("RenewDeadline", c.RenewDeadline, "must be > 0")
	case c.RenewDeadline >= c.LeaseDuration-SafetyMargin:
		return invalid("RenewDeadline", c.RenewDeadline, "must be less than %s − %s (%s)", leaseDuration, SafetyMargin, c.LeaseDuration-SafetyMargin)
	case c.RenewInterval <= 0:
		return invalid("RenewInterval", c.RenewInterval, "must be > 0")
	case c.RenewInterval > c.RenewDeadline/3:
		return invalid("RenewInterval", c.RenewInterval, "must be at most %s/3 (%s) so three renew attempts fit in a deadline", renewDeadline, c.RenewDeadline/3)
	case c.RequestTimeout() < minRequestTimeout:
		field, v := "RenewInterval", any(c.RenewInterval)
		if c.RenewDeadline/3 < c.RenewInterval {
			field, v = "RenewDeadline", c.RenewDeadline
		}
		return invalid(field, v, "the request timeout min(%s, %s/3) = %s must be at least %s: every storage call (acquire, term write, renew, the first token fetch) must fit in it, and real storage takes up to 2s (Azure's SLA) — raise %s and %s", renewInterval, renewDeadline, c.RequestTimeout(), minRequestTimeout, renewInterval, renewDeadline)
	case c.RetryPeriod < minRetryPeriod:
		return invalid("RetryPeriod", c.RetryPeriod, "must be at least %s: every follower polls the one lock blob, and storage throttles a blob past 500 requests a second, the leader's renews included", minRetryPeriod)
	case c.WatchdogTimeout < 0, c.WatchdogTimeout > 0 && c.WatchdogTimeout < c.RenewInterval:
		return invalid("WatchdogTimeout", c.WatchdogTimeout, "must be 0 (off) or at least %s (%s)", renewInterval, c.RenewInterval)
	case c.ShutdownGrace < 0:
		return invalid("ShutdownGrace", c.ShutdownGrace, "must be ≥ 0")
	case c.ObserveEvery < 1:
		return invalid("ObserveEvery", c.ObserveEvery, "must be ≥ 1")
	case c.ConfirmEvery != 0 && c.ConfirmEvery < c.RenewInterval:
		return invalid("ConfirmEvery", c.ConfirmEvery, "must be 0 (off) or at least %s (%s): a leader confirms after a renew", renewInterval, c.RenewInterval)
	}
	return c.validateTakeover()
}

// storableInMetadata reports whether s survives a round trip as an Azure
// metadata value. Metadata travels as x-ms-meta-* HTTP headers: a byte outside
// printable ASCII breaks the request (Azure answers 403, the signature no
// longer matching what the server decoded; a control character is not a
// header at all), and HTTP strips leading and trailing whitespace, so the
// value read back would not be the identity written.
func storableInMetadata(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < ' ' || s[i] > '~' {
			return false
		}
	}
	return s[0] != ' ' && s[len(s)-1] != ' '
}
