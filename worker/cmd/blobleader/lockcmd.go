package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/blobleader/blobleader/worker/election"
	"github.com/blobleader/blobleader/worker/election/bloblock"
	"github.com/blobleader/blobleader/worker/mutex"
)

// `blobleader lock RESOURCE [flags] -- COMMAND`: run COMMAND once under the
// named lock of RESOURCE, like flock or consul lock. It is `blobleader run
// --once` on the resource's lock blob (mutex.BlobName), with run's flags,
// supervisor and guard, plus how long to wait for the lock.

const lockSummary = `blobleader lock — run COMMAND once while holding the named lock of RESOURCE.

Usage:
  blobleader lock RESOURCE [flags] -- COMMAND [ARGS...]

RESOURCE is any id of 1–1024 bytes; its lock is the blob <prefix>/<sha-256 of
RESOURCE> in --container, the same lock the lock service (blobleader locks) and
the Go library (worker/mutex) hand out for that id. It waits for the lock (for
ever, up to --wait, or not at all with --no-wait), runs COMMAND exactly as
blobleader run --once does (BLOBLEADER_TERM is the lock's fencing term; the
command is stopped and killed before the lock can pass to anyone else), releases
the lock and exits with COMMAND's status.

Its flags are blobleader run's but --blob and --once (the lock blob derives
from RESOURCE, the command runs once), plus --prefix, --wait, --no-wait,
--conflict-exit-code and --storage-exit-code. It opens no HTTP listener unless
--listen (or BLOBLEADER_LISTEN) asks for one.

Exit codes: COMMAND's status once it has run; 75 (--conflict-exit-code) not
taken: held by another (or, with --wait, not holding it in time); 69
(--storage-exit-code) not taken: storage failed; 2 invalid configuration or
command; 1 anything else.`

const lockUsage = "blobleader lock RESOURCE [flags] -- COMMAND [ARGS...]"

func runLock(args []string, stdout, stderr io.Writer) error {
	o, err := parseLockOptions(args, stdout)
	if err != nil {
		return err
	}
	return o.run.parsed.explain(superviseRun(o.run, stderr))
}

// lockOptions are `blobleader lock`'s: run's, minus --blob and --once,
// which it sets, plus its own.
type lockOptions struct {
	run          *runOptions
	resource     string
	prefix       string        // --prefix
	wait         time.Duration // --wait, when waitGiven
	waitGiven    bool          // --wait given; else: for ever
	noWait       bool          // --no-wait
	conflictCode int           // --conflict-exit-code: not taken, held by another
	storageCode  int           // --storage-exit-code: not taken, storage failed
}

// Default exit statuses of a lock not taken: sysexits' EX_TEMPFAIL (try
// again later) for a lock held by another, EX_UNAVAILABLE for storage.
const (
	defaultConflictExitCode = 75
	defaultStorageExitCode  = 69
)

func parseLockOptions(args []string, out io.Writer) (*lockOptions, error) {
	o := &lockOptions{run: &runOptions{}}
	fs := o.flags(out)
	// 1. RESOURCE, then the flags and the command.
	if len(args) == 0 || strings.HasPrefix(args[0], "-") && args[0] != "--" {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "-help" || args[0] == "--help") {
			fs.help()
			return nil, flag.ErrHelp
		}
		return nil, usagef("missing RESOURCE: %s", lockUsage)
	}
	o.resource = args[0]
	if err := o.run.parseArgs(fs, args[1:], lockUsage); err != nil {
		return nil, err
	}
	o.waitGiven = fs.set("wait")
	// 2. Its own rules, then the lock blob, then run's.
	if err := o.validate(); err != nil {
		return nil, fs.explain(err)
	}
	blob, err := mutex.BlobName(o.prefix, o.resource)
	var bad *mutex.ResourceIDError
	switch {
	case errors.As(err, &bad):
		return nil, usagef("invalid RESOURCE (%d bytes): %s", len(o.resource), bad.Rule)
	case err != nil:
		return nil, usagef("invalid RESOURCE (%d bytes): %v", len(o.resource), err)
	}
	o.run.blob, o.run.once = blob, true
	if err := o.run.check(fs); err != nil {
		return nil, err
	}
	// 3. What run does differently under a named lock.
	if !fs.set("listen") {
		o.run.listen = "" // a one-shot lock listens only when asked
	}
	o.run.openLock = func(c *container.Client) (*bloblock.Lock, error) { return mutex.BlobLease(c, o.prefix, o.resource) }
	if o.waitGiven || o.noWait {
		o.run.giveUp = &giveUp{resource: o.resource, wait: o.wait, noWait: o.noWait, requestTimeout: o.run.timing.RequestTimeout(),
			conflictCode: o.conflictCode, storageCode: o.storageCode}
	}
	return o, nil
}

// flags is run's flag set without --blob and --once, with lock's own.
func (o *lockOptions) flags(out io.Writer) *cmdFlags {
	fs := o.run.flags("blobleader lock", out, lockSummary)
	fs.refuse("the lock blob derives from RESOURCE and the command runs once", "blob", "once")
	// A one-shot lock listens only when --listen or its twin asks
	// (parseLockOptions): no default address to show. The value stays
	// run's, which the shared rules check, until then.
	listen := fs.Lookup("listen")
	listen.DefValue = ""
	listen.Usage += "; none unless given (a one-shot lock opens no listener unless asked)"
	fs.StringVar(&o.prefix, "prefix", mutex.DefaultPrefix, "lock blob prefix: RESOURCE's lock is the blob <prefix>/<sha-256 of RESOURCE>")
	fs.DurationVar(&o.wait, "wait", 0, "give up if not holding the lock within this long; ≥ 0 (absent: wait for ever)")
	fs.BoolVar(&o.noWait, "no-wait", false, "give up when the first attempt finds the lock held or storage failing")
	fs.IntVar(&o.conflictCode, "conflict-exit-code", defaultConflictExitCode, "exit status when the lock was not taken because another holds it, like flock -E; 1–255")
	fs.IntVar(&o.storageCode, "storage-exit-code", defaultStorageExitCode, "exit status when the lock was not taken because storage failed; 1–255")
	return fs
}

// validate checks lock's own flags.
func (o *lockOptions) validate() error {
	for _, c := range []struct {
		flag flagRef
		code int
	}{{"conflict-exit-code", o.conflictCode}, {"storage-exit-code", o.storageCode}} {
		if c.code < 1 || c.code > 255 {
			return usagef("invalid %s %d: must be between 1 and 255", c.flag, c.code)
		}
	}
	cfg := mutex.DefaultConfig("blobleader-lock")
	cfg.Prefix = o.prefix
	if err := cfg.Validate(); err != nil {
		return configUsage(err, map[string]string{"Prefix": "prefix"})
	}
	switch {
	case o.waitGiven && o.wait < 0:
		return usagef("invalid %s %s: must be ≥ 0, e.g. 30s", flagRef("wait"), o.wait)
	case o.waitGiven && o.noWait:
		return usagef("%s and %s are exclusive: set one", flagRef("wait"), flagRef("no-wait"))
	}
	return nil
}

// giveUp stops a `lock` that has not started holding within its wait, or,
// with --no-wait, as soon as its first attempt finds the lock held by
// another or storage failing. It remembers what the attempts last found —
// a holder, or storage's failure — to say why, with its own exit status.
type giveUp struct {
	resource       string
	wait           time.Duration
	noWait         bool
	requestTimeout time.Duration
	conflictCode   int
	storageCode    int

	mu      sync.Mutex
	started bool   // leadership began: never give up after
	held    string // the last attempt found it held: by whom
	failed  string // the last attempt failed: storage's answer
	why     string // set once given up
	code    int    // the exit status given up with
}

// watch wraps the election's event callback (called on the election loop,
// so it only looks and cancels); cancel stops contending.
func (g *giveUp) watch(next func(election.Event), cancel context.CancelFunc) func(election.Event) {
	limit := g.wait
	if g.noWait {
		// One attempt: its acquire and, if held, the read of who holds.
		limit = 2*g.requestTimeout + time.Second
	}
	time.AfterFunc(limit, func() { g.timeUp(cancel, limit) })
	return func(ev election.Event) {
		switch ev.Kind {
		case election.EventStartedLeading:
			g.mu.Lock()
			g.started = true
			g.mu.Unlock()
		case election.EventObservedLeader:
			g.found(cancel, fmt.Sprintf("held by %s (term %d)", ev.Leader, ev.Term), "")
		case election.EventAcquireFailed:
			g.found(cancel, "", ev.Reason)
		}
		next(ev)
	}
}

// found records what an attempt found (a holder, or storage's failure);
// with --no-wait, the first finding ends the wait.
func (g *giveUp) found(cancel context.CancelFunc, held, failed string) {
	g.mu.Lock()
	g.held, g.failed = held, failed
	g.mu.Unlock()
	if g.noWait {
		g.timeUp(cancel, 0)
	}
}

// timeUp gives up with what the attempts last found.
func (g *giveUp) timeUp(cancel context.CancelFunc, waited time.Duration) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.started || g.why != "" {
		return
	}
	g.why, g.code = g.held, g.conflictCode
	switch {
	case g.failed != "":
		g.why, g.code = "storage failed: "+g.failed, g.storageCode
	case g.held == "":
		g.why = fmt.Sprintf("not holding it within %s", waited)
	case waited > 0 && !g.noWait:
		g.why = fmt.Sprintf("not holding it within %s: %s", waited, g.held)
	}
	cancel()
}

func (g *giveUp) gaveUp() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.why != "" && !g.started
}

// exit is the give-up's one line and its exit status: the conflict's or
// storage's.
func (g *giveUp) exit(stderr io.Writer) error {
	msg := fmt.Sprintf("lock %q not taken: %s", g.resource, g.why)
	fmt.Fprintf(stderr, "blobleader: %s\n", msg)
	return &exitStatusError{code: g.code, msg: msg}
}
