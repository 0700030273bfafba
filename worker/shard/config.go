package shard

import (
	"context"
	"fmt"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/blobleader/blobleader/worker/election"
)

// MaxShards is the largest pool: one List Blobs page (5,000 items) holds every
// shard blob with room for members, and the assignment stays a small document.
const MaxShards = 1024

// Config configures a Worker. Build it field by field; New validates it.
type Config struct {
	// Shards N: how many shards the pool has, 1–MaxShards. Every worker of a
	// pool must use the same N (the leader's N is the one that counts).
	Shards int

	// Election holds this worker's identity and the timings used for its
	// member lease and for every shard lease: the same L, renew deadline,
	// renew interval and poll period P as the election, validated by the
	// same rules. Its WatchdogTimeout and ShutdownGrace apply to shard tasks.
	// Shard electors are built from copies of it, so every rule it carries
	// holds for the shard leases too.
	Election election.Config

	// Container holds the pool (see Layout) and the shard ledgers.
	Container *container.Client

	// Blob is the election's lock blob name; it names the pool's blobs.
	Blob string

	// Task is one shard's work. It runs while this worker holds the shard's
	// lease, with the shard's fencing term and a context cancelled the moment
	// ownership ends. It should pass the term to every side effect, call
	// election.Progress(ctx) as it makes progress, and may call
	// ReportProgress(ctx, seq) so the leader's summary shows it. If it
	// returns, the shard is released (and a standby takes it over).
	Task func(ctx context.Context, shard int, term int64) error

	// OnEvent receives every Event, synchronously: it must not block.
	OnEvent func(Event)

	// OnRepair, if set, is told each repair of a pool document this worker
	// makes while it leads: the object (ObjectAssignment, ObjectSummary) and
	// the cause (CauseMissing, …), once per document gone bad. It is called
	// on the coordinator's goroutine and must not block.
	OnRepair func(object, cause string)

	// ReportEvery is how often a member writes its progress report, and
	// SummaryEvery how often the leader publishes the summary. Default
	// 5·RetryPeriod each; at least RetryPeriod.
	ReportEvery, SummaryEvery time.Duration
}

// ErrInvalidConfig is wrapped by every configuration error New returns.
var ErrInvalidConfig = election.ErrInvalidConfig

func (c *Config) validate() error {
	bad := func(field string, v any, rule string) error {
		return &election.ConfigError{Field: field, Value: fmt.Sprint(v), Rule: rule}
	}
	if err := c.Election.Validate(); err != nil {
		return err
	}
	p := c.Election.RetryPeriod
	if c.ReportEvery == 0 {
		c.ReportEvery = 5 * p
	}
	if c.SummaryEvery == 0 {
		c.SummaryEvery = 5 * p
	}
	switch {
	case c.Shards < 1 || c.Shards > MaxShards:
		return bad("Shards", c.Shards, fmt.Sprintf("must be between 1 and %d", MaxShards))
	case c.Container == nil:
		return bad("Container", "nil", "must be set")
	case c.Blob == "":
		return bad("Blob", `""`, "must not be empty")
	case c.Task == nil:
		return bad("Task", "nil", "must be set")
	case c.ReportEvery < p:
		return bad("ReportEvery", c.ReportEvery, fmt.Sprintf("must be at least RetryPeriod (%s)", p))
	case c.SummaryEvery < p:
		return bad("SummaryEvery", c.SummaryEvery, fmt.Sprintf("must be at least RetryPeriod (%s)", p))
	}
	return nil
}

// Timings derived from the election's parameters (docs/architecture.md,
// "Shards"). poll is a worker's or the leader's worst gap between two reads,
// P·1.1 (the ±10% jitter); rt is the per-request timeout.

// ViewTTL is how long an assignment read stays good: a worker starts no
// acquisition with a view whose last successful read was sent longer ago.
// It tolerates one failed read: 2·(P·1.1 + rt).
func (c Config) ViewTTL() time.Duration {
	return 2 * (poll(c.Election) + c.Election.RequestTimeout())
}

// drain is how long a worker keeps a shard that the assignment has moved
// away from it before releasing it: ViewTTL, so every worker that could
// still act on the older view has either read the new one or stopped
// acquiring. The new owner then acquires within P·1.1 of the release.
func (c Config) drain() time.Duration { return c.ViewTTL() }

// standbyWarmup is how long a worker whose view went stale (a partition, an
// outage; not its start) waits before it acts as a standby again, so the
// owners, not their standbys, win back the shards after an outage: L.
func (c Config) standbyWarmup() time.Duration { return c.Election.LeaseDuration }

// memberGrace is how long the leader keeps counting a member whose lease it
// no longer sees: the member elector's hand-off pause after a missed
// deadline (2·P·1.1) plus one poll and two requests. Within it the member
// keeps its shards and receives none, so a blip or an outage moves nothing.
func (c Config) memberGrace() time.Duration {
	return 3*poll(c.Election) + 2*c.Election.RequestTimeout()
}

// suspectFor is how long the leader gives a member nothing new after a
// standby took one of its shards over (it probably died: its member lease
// lapses within L).
func (c Config) suspectFor() time.Duration {
	return c.Election.LeaseDuration + poll(c.Election) + c.Election.RequestTimeout()
}

// settleBound is the stated time within which the shards are balanced again
// after the last membership change (a join, a leave, a crash), when no
// fault is in place: L (a crashed member's leases expire; a crashed leader is
// replaced), then a leader pass, a worker's read, the drain, and the new
// owner's poll, each P·1.1 plus a request timeout.
func (c Config) settleBound() time.Duration {
	return c.Election.LeaseDuration + 3*poll(c.Election) + c.ViewTTL() + 3*c.Election.RequestTimeout()
}

// BalanceBound is the stated time within which every live member owns
// ⌊N/M⌋ or ⌈N/M⌉ shards after the last membership change when no other fault
// is in place: settleBound plus suspectFor, since a member that restarts
// under its identity after a standby took its shards receives nothing for
// suspectFor. The checker's DefaultSettle is the same formula.
func (c Config) BalanceBound() time.Duration { return c.settleBound() + c.suspectFor() }

func poll(e election.Config) time.Duration { return e.RetryPeriod + e.RetryPeriod/10 }
