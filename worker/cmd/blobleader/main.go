// Command blobleader is one contender in a leader election on an Azure Blob
// Storage lease. The leader runs the reference task (a fenced ledger append
// every --tick); the others follow and take over when it goes. See --help and
// docs/architecture.md.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/blobleader/blobleader/worker/election"
	"github.com/blobleader/blobleader/worker/internal/buildinfo"
	"github.com/blobleader/blobleader/worker/supervise"
)

// processStart anchors mono_ns in the history.
var processStart = time.Now()

func main() {
	// A log reader gone must not kill us (sigpipe.go).
	catchSIGPIPE()
	if supervise.IsGuard() { // `run`'s group guard (worker/supervise/guard.go)
		os.Exit(supervise.RunGuard())
	}
	if supervise.IsShim() { // `run`'s command parent (worker/supervise/shim_linux.go)
		os.Exit(supervise.RunShim())
	}
	os.Exit(run(argsFor(os.Args[0], os.Args[1:]), os.Stdout, os.Stderr))
}

// A subcommand is how it runs and where a warning about an unknown
// BLOBLEADER_* variable goes (envcheck.go): its log, which it writes once
// open (logUnknownEnv), or stderr.
type subcommand struct {
	run    func(args []string, stdout, stderr io.Writer) error
	logged bool // writes a log: the warnings go there
}

// subcommands by name; without one, the binary is the worker.
var subcommands = map[string]subcommand{
	"run":          {run: runRun, logged: true},
	"lock":         {run: runLock, logged: true},
	"locks":        {run: runLocks, logged: true},
	"ledger":       {run: runLedger},
	"shards":       {run: runShards},
	"status":       {run: runStatus},
	"recover-term": {run: runRecoverTerm},
}

// run is main without os.Exit, returning the exit code: 0 clean stop,
// 2 invalid configuration, 1 anything else (run --once: the command's status).
func run(args []string, stdout, stderr io.Writer) int {
	cmd, rest := subcommand{run: runWorker, logged: true}, args
	if len(args) > 0 {
		if args[0] == "version" || args[0] == "--version" || args[0] == "-version" {
			return exitCode(runVersion(args[1:], stdout), stderr)
		}
		if sub, ok := subcommands[args[0]]; ok {
			cmd, rest = sub, args[1:]
		}
	}
	if !cmd.logged {
		printUnknownEnv(stderr)
	}
	unknownEnvLogged.Store(false)
	err := cmd.run(rest, stdout, stderr)
	// A command with a log tells the unknown variables there once it is
	// open; refused before that (exit 2), it tells them on stderr before
	// the refusal: a misspelt twin is often the refusal's reason.
	if cmd.logged && refusal(err) && !unknownEnvLogged.Load() {
		printUnknownEnv(stderr)
	}
	return exitCode(err, stderr)
}

// refusal says whether err is an invalid configuration: exit 2 (exitCode).
func refusal(err error) bool {
	var ue *usageError
	var ee *exitStatusError
	return !errors.As(err, &ee) && errors.As(err, &ue)
}

// exitCode is the exit code of err, which it prints: 0 clean stop (or
// --help), 2 invalid configuration, 1 anything else, or the command's
// status (run --once).
func exitCode(err error, stderr io.Writer) int {
	var ue *usageError
	var ee *exitStatusError
	switch {
	case err == nil || errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &ee): // run --once: the command's status
		return ee.code
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "blobleader: %v\n", err)
		return 2
	default:
		fmt.Fprintf(stderr, "blobleader: %v\n", err)
		return 1
	}
}

// runVersion prints what the build recorded: the module's version, the Go
// version and platform, and the VCS revision when stamped
// (worker/internal/buildinfo).
func runVersion(args []string, stdout io.Writer) error {
	if len(args) == 1 && (args[0] == "--help" || args[0] == "-help" || args[0] == "-h") {
		fmt.Fprint(stdout, "blobleader version — print the version the build recorded (also: blobleader --version):\n"+
			"blobleader <module version> <go version> <os>/<arch>, then the VCS revision when the build stamped one.\n\n"+
			"Usage:\n  blobleader version\n")
		return nil
	}
	if len(args) > 0 {
		return usagef("unexpected argument %q: blobleader version takes none", args[0])
	}
	fmt.Fprintf(stdout, "blobleader %s\n", buildinfo.Read())
	return nil
}

func runWorker(args []string, stdout, stderr io.Writer) error {
	o, err := parseOptions(args, stdout)
	if err != nil {
		return err
	}
	n, err := openNode(&o.options, o.electionConfig(), stderr, o.buildMode)
	if err != nil {
		return o.parsed.explain(err)
	}
	defer n.close()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	return o.parsed.explain(n.run(ctx))
}

// buildMode is the worker's mode on n: the reference task on the ledger,
// or in shard mode the pool's coordination, with the pool member as a
// companion.
func (o *workerOptions) buildMode(n *node) (mode, error) {
	if o.shards == 0 {
		task := &ledgerTask{c: n.storage, blob: o.blob, identity: o.identity, lock: o.blob, container: o.container, tick: o.tick,
			requestTimeout: n.cfg.RequestTimeout(), onRepair: n.metrics.Repaired, log: n.log}
		return mode{callbacks: election.Callbacks{OnStartedLeading: o.build.task(task.run, o.tick)}}, nil
	}
	shards, err := newShardMode(o, n)
	if err != nil {
		return mode{}, err
	}
	return mode{callbacks: election.Callbacks{OnStartedLeading: shards.lead}, companions: []companion{shards}}, nil
}
