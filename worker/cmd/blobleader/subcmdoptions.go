package main

import (
	"context"
	"flag"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/blobleader/blobleader/worker/election/lease"
)

// The options of the subcommands that do not contend: `blobleader ledger`,
// `shards`, `recover-term` (which work on storage: readOptions) and
// `status` (which asks a running worker). Each flag is also read from its
// env twin (cmdflags.go); every check runs before storage is touched.

// readOptions are the flags of the subcommands that work on storage: where,
// and how long to try.
type readOptions struct {
	storage storageOptions
	timeout time.Duration // --timeout: the whole command's budget
	parsed  *cmdFlags     // the flag set parsed: names the refusals built on storage (cmdFlags.explain)
}

func (r *readOptions) register(fs *flag.FlagSet) {
	r.storage.register(fs)
	fs.DurationVar(&r.timeout, "timeout", 30*time.Second, "give up reading after this long")
}

func (r *readOptions) validate() error {
	if err := r.storage.validate(); err != nil {
		return err
	}
	if r.timeout <= 0 {
		return usagef("invalid %s %s: must be > 0", flagRef("timeout"), r.timeout)
	}
	return r.storage.requireStorage()
}

// onStorage calls do with a client for the storage flags and a context
// that ends at --timeout.
func (r *readOptions) onStorage(do func(context.Context, *container.Client) error) error {
	c, err := newContainerClient(r.storage, nil, r.timeout, nil)
	if err != nil {
		return r.parsed.explain(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), r.timeout)
	defer cancel()
	return r.parsed.explain(do(ctx, c))
}

// parseRead parses args into fs, on which r and the command's own flags are
// registered, then checks r and the command's own rules (check, optional),
// each refusal naming its source.
func parseRead(fs *cmdFlags, r *readOptions, args []string, check func() error) error {
	if err := fs.parse(args); err != nil {
		return err
	}
	r.parsed = fs
	if check != nil {
		if err := check(); err != nil {
			return fs.explain(err)
		}
	}
	return fs.explain(r.validate())
}

// ledgerOptions are `blobleader ledger`'s.
type ledgerOptions struct {
	readOptions
	verify bool // --verify
	asJSON bool // --json
}

const ledgerSummary = `blobleader ledger — print (and verify) the fenced ledger the leaders write.

Usage:
  blobleader ledger [--verify] [--json] [storage flags]

Reads the election's ledger (<blob>-ledger/) and, when --blob is a --shards
pool's, every shard's ledger (<blob>-shard-ledgers/<nnnn>-ledger/), each
checked on its own. Finding no ledger, or no entry, is a failure (exit 1):
a check that saw nothing has not passed.

Exit codes: 0 printed (and verified), 1 nothing found, a rule broken or
storage failed, 2 invalid flags.`

func parseLedgerOptions(args []string, out io.Writer) (*ledgerOptions, error) {
	o := &ledgerOptions{}
	if err := parseRead(o.flags(out), &o.readOptions, args, nil); err != nil {
		return nil, err
	}
	return o, nil
}

func (o *ledgerOptions) flags(out io.Writer) *cmdFlags {
	fs := newFlagSet("blobleader ledger", out, ledgerSummary)
	o.register(fs.FlagSet)
	fs.BoolVar(&o.verify, "verify", false, "check every ledger found: seq contiguous from 1, no duplicates, terms never decreasing; exit 1 if not, or if there is no entry to check")
	fs.BoolVar(&o.asJSON, "json", false, "print entries as JSON lines instead of a table (a shard's carry \"shard\")")
	return fs
}

// shardsOptions are `blobleader shards`'.
type shardsOptions struct {
	readOptions
	asJSON bool // --json
}

const shardsSummary = `blobleader shards — print the leader's summary of a --shards pool:
per shard its owner, the owner's shard term and its progress (the last
sequence of the shard's fenced ledger), as the leader last published it.

Usage:
  blobleader shards [--json] [storage flags]

Exit codes: 0 printed, 1 no summary yet or storage failed, 2 invalid flags.`

func parseShardsOptions(args []string, out io.Writer) (*shardsOptions, error) {
	o := &shardsOptions{}
	if err := parseRead(o.flags(out), &o.readOptions, args, nil); err != nil {
		return nil, err
	}
	return o, nil
}

func (o *shardsOptions) flags(out io.Writer) *cmdFlags {
	fs := newFlagSet("blobleader shards", out, shardsSummary)
	o.register(fs.FlagSet)
	fs.BoolVar(&o.asJSON, "json", false, "print the summary document as JSON")
	return fs
}

// recoverOptions are `blobleader recover-term`'s.
type recoverOptions struct {
	readOptions
	floor int64 // --floor: the term is set to floor+1
}

const recoverSummary = `blobleader recover-term — set the lock's term above a floor, with the workers running.

Usage:
  blobleader recover-term --floor N [storage flags]

For a lock whose term an operator mistyped (no worker can lead; /readyz says
why), or that is below terms a fenced store has seen (storage restored, a
clock set back): N is the highest term any leader may have used — e.g. the
last ledger entry's (blobleader ledger --json | tail -1). It takes the lock's
lease (breaking the leader's if one holds it: that leader steps down at its
next renew, as after any forced break), writes term N+1, and releases; the
next leader stamps above N+1. It refuses (exit 2, the record untouched) when
the term is already N+1 or more: a term is never lowered; and a floor above
9007194959773694 (2^53 − 2 − 2^32), which would leave fewer than 2^32 terms
below the highest term (2^53 − 1). An unusable term (not a non-negative
integer, or 9007199254740991 or more) is repaired with any N.

Exit codes: 0 term set, 2 invalid input or a floor that would lower the term,
1 anything else (storage unreachable, the lease kept being re-taken).`

func parseRecoverOptions(args []string, out io.Writer) (*recoverOptions, error) {
	o := &recoverOptions{}
	var floor string
	err := parseRead(o.flags(out, &floor), &o.readOptions, args, func() (err error) {
		o.floor, err = parseFloor(floor)
		return err
	})
	if err != nil {
		return nil, err
	}
	return o, nil
}

// flags registers --floor, as given, on floor; parseFloor checks it.
func (o *recoverOptions) flags(out io.Writer, floor *string) *cmdFlags {
	fs := newFlagSet("blobleader recover-term", out, recoverSummary)
	o.register(fs.FlagSet)
	fs.StringVar(floor, "floor", "", "the highest term any leader may have used (required): the term is set to floor+1; a non-negative integer up to 9007194959773694")
	return fs
}

// floorRoom is how many terms recover-term leaves above the term it sets
// (floor+1), below lease.MaxTerm: 2^32, over a century of leaderships at
// one a second (the hand-off pause and the lease duration make a fleet
// change leaders far less often). A floor with less room would hand the
// fleet a term that a few leader changes exhaust.
const floorRoom = 1 << 32

// maxFloor is the highest --floor recover-term accepts.
const maxFloor = lease.MaxTerm - 1 - floorRoom

// parseFloor checks --floor: a non-negative integer whose successor, the
// term set, leaves floorRoom terms below lease.MaxTerm.
func parseFloor(floor string) (int64, error) {
	n, err := strconv.ParseInt(floor, 10, 64)
	switch {
	case floor == "":
		return 0, usagef("missing %s: the highest term any leader may have used (e.g. the last ledger entry's)", flagRef("floor"))
	case err != nil || n < 0:
		return 0, usagef("invalid %s %q: must be a non-negative integer", flagRef("floor"), floor)
	case n > maxFloor:
		return 0, usagef("invalid %s %d: must be at most %d, so that the term set (floor+1) leaves room for %d more terms below the highest term, %d (2^53 − 1)", flagRef("floor"), n, int64(maxFloor), int64(floorRoom), int64(lease.MaxTerm))
	}
	return n, nil
}

// statusOptions are `blobleader status`'.
type statusOptions struct {
	url string // --url: the worker's HTTP endpoints
}

const statusSummary = `blobleader status — print a running worker's /status JSON.

Usage:
  blobleader status [--url http://127.0.0.1:8080]`

func parseStatusOptions(args []string, out io.Writer) (*statusOptions, error) {
	o := &statusOptions{}
	fs := o.flags(out)
	if err := fs.parse(args); err != nil {
		return nil, err
	}
	if _, err := http.NewRequest(http.MethodGet, o.url+"/status", nil); err != nil {
		return nil, fs.explain(usagef("invalid %s %q: %v", flagRef("url"), o.url, err))
	}
	if u, err := url.Parse(o.url); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fs.explain(usagef("invalid %s %q: must be an absolute http:// or https:// URL with a host, e.g. http://127.0.0.1:8080", flagRef("url"), o.url))
	}
	return o, nil
}

func (o *statusOptions) flags(out io.Writer) *cmdFlags {
	fs := newFlagSet("blobleader status", out, statusSummary)
	fs.StringVar(&o.url, "url", "http://127.0.0.1:8080", "base URL of the worker's HTTP endpoints")
	return fs
}
