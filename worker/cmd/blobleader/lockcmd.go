package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
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

Own flags (each with its env twin):
  --prefix P     lock blob prefix (default locks)          [BLOBLEADER_PREFIX]
  --wait D       give up if not holding the lock within D  [BLOBLEADER_WAIT]
  --no-wait      give up when the first attempt finds the lock held or storage failing  [BLOBLEADER_NO_WAIT]
  --conflict-exit-code N  exit status when the lock was not taken because another
                 holds it (default 75), like flock -E      [BLOBLEADER_CONFLICT_EXIT_CODE]
  --storage-exit-code N   exit status when the lock was not taken because storage
                 failed (default 69)                       [BLOBLEADER_STORAGE_EXIT_CODE]
Every other flag is blobleader run's (blobleader run --help) but --blob and --once.
It opens no HTTP listener unless --listen (or BLOBLEADER_LISTEN) asks for one.

Exit codes: COMMAND's status once it has run; 75 (--conflict-exit-code) not
taken: held by another (or, with --wait, not holding it in time); 69
(--storage-exit-code) not taken: storage failed; 2 invalid configuration or
command; 1 anything else.`

func runLock(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") && args[0] != "--" {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "-help" || args[0] == "--help") {
			fmt.Fprintln(stdout, lockSummary)
			return flag.ErrHelp
		}
		return usagef("missing RESOURCE: blobleader lock RESOURCE [flags] -- COMMAND [ARGS...]")
	}
	resource, rest := args[0], args[1:]
	sep := slices.Index(rest, "--")
	if sep < 0 {
		sep = len(rest)
	}
	own, runArgs, err := lockFlags(rest[:sep])
	if err != nil {
		return err
	}
	blob, err := mutex.BlobName(own.prefix, resource)
	var bad *mutex.ResourceIDError
	switch {
	case errors.As(err, &bad):
		return usagef("invalid RESOURCE (%d bytes): %s", len(resource), bad.Rule)
	case err != nil:
		return usagef("invalid RESOURCE (%d bytes): %v", len(resource), err)
	}
	o, err := parseRunOptions(append(append([]string{"--once", "--blob", blob}, runArgs...), rest[sep:]...), stdout)
	if err != nil {
		return err
	}
	if !own.listen {
		o.listen = "" // a one-shot lock listens only when asked
	}
	o.openLock = func(c *container.Client) (*bloblock.Lock, error) { return mutex.BlobLease(c, own.prefix, resource) }
	if own.wait >= 0 || own.noWait {
		o.giveUp = &giveUp{resource: resource, wait: own.wait, noWait: own.noWait, requestTimeout: o.timing.RequestTimeout(),
			conflictCode: own.conflictCode, storageCode: own.storageCode}
	}
	return superviseRun(o, stderr)
}

type lockOwn struct {
	prefix       string
	wait         time.Duration // < 0: for ever
	noWait       bool
	conflictCode int  // exit status: not taken, held by another
	storageCode  int  // exit status: not taken, storage failed
	listen       bool // --listen or BLOBLEADER_LISTEN given
}

// Default exit statuses of a lock not taken: sysexits' EX_TEMPFAIL (try
// again later) for a lock held by another, EX_UNAVAILABLE for storage.
const (
	defaultConflictExitCode = 75
	defaultStorageExitCode  = 69
)

// lockFlags takes lock's own flags (and their env twins) out of args and
// refuses --blob and --once, which lock sets; the rest are run's.
func lockFlags(args []string) (lockOwn, []string, error) {
	own := lockOwn{prefix: mutex.DefaultPrefix, wait: -1, conflictCode: defaultConflictExitCode, storageCode: defaultStorageExitCode}
	_, own.listen = os.LookupEnv(envName("listen"))
	set := func(name, v string, from string) error {
		switch name {
		case "conflict-exit-code", "storage-exit-code":
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || n > 255 {
				return usagef("invalid %s %s: must be between 1 and 255", from, v)
			}
			if name == "conflict-exit-code" {
				own.conflictCode = n
			} else {
				own.storageCode = n
			}
		case "prefix":
			own.prefix = v
			if err := storageNameOK(v); err != nil {
				return usagef("invalid %s %q: %v", from, v, err)
			}
		case "wait":
			d, err := time.ParseDuration(v)
			if err != nil || d < 0 {
				return usagef("invalid %s %q: must be a duration ≥ 0, e.g. 30s", from, v)
			}
			own.wait = d
		case "no-wait":
			own.noWait = v == "" || v == "true" || v == "1"
			if !own.noWait && v != "false" && v != "0" {
				return usagef("invalid %s %q: must be true or false", from, v)
			}
		}
		return nil
	}
	for _, name := range []string{"prefix", "wait", "no-wait", "conflict-exit-code", "storage-exit-code"} {
		if v, ok := os.LookupEnv(envName(name)); ok {
			if err := set(name, v, envName(name)); err != nil {
				return own, nil, err
			}
		}
	}
	var rest []string
	for i := 0; i < len(args); i++ {
		name, v, hasV := strings.Cut(strings.TrimLeft(args[i], "-"), "=")
		switch {
		case !strings.HasPrefix(args[i], "-"):
			rest = append(rest, args[i])
			continue
		case name == "blob" || name == "once":
			return own, nil, usagef("--%s is not a flag of blobleader lock: the lock blob derives from RESOURCE and the command runs once", name)
		case name == "listen":
			own.listen = true
			rest = append(rest, args[i])
			continue
		case name == "no-wait":
		case name == "prefix" || name == "wait" || name == "conflict-exit-code" || name == "storage-exit-code":
			if !hasV {
				if i+1 >= len(args) {
					return own, nil, usagef("flag needs an argument: --%s", name)
				}
				i++
				v = args[i]
			}
		default:
			rest = append(rest, args[i])
			continue
		}
		if err := set(name, v, "--"+name); err != nil {
			return own, nil, err
		}
	}
	if own.noWait && own.wait >= 0 {
		return own, nil, usagef("--wait and --no-wait are exclusive: set one")
	}
	return own, rest, nil
}

// storageNameOK checks a prefix as mutex.Config.Validate does.
func storageNameOK(prefix string) error {
	c := mutex.DefaultConfig("x")
	c.Prefix = prefix
	var bad *election.ConfigError
	if errors.As(c.Validate(), &bad) {
		return errors.New(bad.Rule)
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
