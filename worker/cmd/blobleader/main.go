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

// run is main without os.Exit, returning the exit code: 0 clean stop,
// 2 invalid configuration, 1 anything else (run --once: the command's status).
func run(args []string, stdout, stderr io.Writer) int {
	var err error
	switch {
	case len(args) > 0 && args[0] == "ledger":
		err = runLedger(args[1:], stdout, stderr)
	case len(args) > 0 && args[0] == "status":
		err = runStatus(args[1:], stdout)
	case len(args) > 0 && args[0] == "run":
		err = runRun(args[1:], stdout, stderr)
	case len(args) > 0 && args[0] == "shards":
		err = runShards(args[1:], stdout, stderr)
	case len(args) > 0 && args[0] == "locks":
		err = runLocks(args[1:], stdout, stderr)
	case len(args) > 0 && args[0] == "lock":
		err = runLock(args[1:], stdout, stderr)
	case len(args) > 0 && args[0] == "recover-term":
		err = runRecoverTerm(args[1:], stdout, stderr)
	default:
		err = runWorker(args, stdout, stderr)
	}
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

func runWorker(args []string, stdout, stderr io.Writer) error {
	o, err := parseOptions(args, stdout)
	if err != nil {
		return err
	}
	n, err := openNode(&o.options, o.electionConfig(), stderr, o.buildMode)
	if err != nil {
		return err
	}
	defer n.close()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	return n.run(ctx)
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
