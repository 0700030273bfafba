package mutex

import (
	"log/slog"

	"github.com/blobleader/blobleader/worker/election"
	"github.com/blobleader/blobleader/worker/storage"
)

// DefaultPrefix is where the lock blobs live in the container:
// "locks/<sha-256 of the id>".
const DefaultPrefix = "locks"

// Config holds a Locker's parameters. Build it from DefaultConfig.
type Config struct {
	// Owner names the holder in the lock's record (a *Held's holdings;
	// stateless operations name theirs in the Lease). Printable ASCII, no
	// leading or trailing space, at most election.MaxIdentityLength bytes.
	Owner string

	// Prefix is the blob name prefix of the lock blobs; default
	// DefaultPrefix. Prefix + "/" + 64 hex digits must be a name storage
	// keeps as written (storage.CheckBlobName).
	Prefix string

	// Timing: LeaseDuration L (whole seconds, 15s–60s, default 15s) is the
	// lease a *Held takes; RenewDeadline D (< L − 2s, default 10s) how long
	// after the send of its last successful renew it believes it holds;
	// RenewInterval (≤ D/3, default 2s) how often it renews; RetryPeriod P
	// (≥ 500ms, default 1s) how often Lock polls a held lock. The rules are
	// the election's (election.Config.Validate).
	election.Timing

	// Logger receives Lock's retried storage failures, as the storage_error
	// line (docs/architecture.md#log-lines-the-alerts-read), the first of
	// each operation, status and code at once and then one per
	// LeaseDuration; it must not block. nil: slog.Default().
	Logger *slog.Logger
}

// DefaultConfig returns the defaults for owner: the election's timing and
// DefaultPrefix.
func DefaultConfig(owner string) Config {
	return Config{Owner: owner, Prefix: DefaultPrefix, Timing: election.DefaultTiming()}
}

// Validate returns the first broken rule as an *election.ConfigError naming
// the field (Owner, Prefix, LeaseDuration, …), the rule and the value.
func (c Config) Validate() error {
	if err := CheckOwner(c.Owner); err != nil {
		return err
	}
	// The timing's rules are the election's, on the same field names.
	ec := election.DefaultConfig(c.Owner)
	ec.Timing = c.Timing
	if err := ec.Validate(); err != nil {
		return err
	}
	if err := storage.CheckBlobName(c.Prefix + "/" + hashHex("")); err != nil {
		return &election.ConfigError{Field: "Prefix", Value: `"` + c.Prefix + `"`, Rule: "with a lock blob name after it, must " + err.Error()}
	}
	return nil
}

// CheckOwner returns nil for a holder name a lock's record can carry —
// printable ASCII, no leading or trailing space, at most
// election.MaxIdentityLength bytes (the election's rule for an identity) —
// and otherwise an *election.ConfigError naming Owner and the rule.
func CheckOwner(owner string) error { return election.CheckIdentity("Owner", owner) }
