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
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/blobleader/blobleader/worker/dialer"
	"github.com/blobleader/blobleader/worker/election"
	"github.com/blobleader/blobleader/worker/election/bloblock"
	"github.com/blobleader/blobleader/worker/status"
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

func newLogger(format string, w io.Writer) *slog.Logger {
	if format == "auto" {
		format = "json"
		if f, ok := w.(*os.File); ok {
			if fi, err := f.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
				format = "text"
			}
		}
	}
	if format == "text" {
		return slog.New(slog.NewTextHandler(w, nil))
	}
	return slog.New(slog.NewJSONHandler(w, nil))
}

// newContainerClient builds a client for s; cred (nil: the client makes its
// own) is the account URL's credential, shared so one warm-up serves all.
func newContainerClient(s storageOptions, cred azcore.TokenCredential, requestTimeout time.Duration, observe bloblock.ObserveFunc) (*container.Client, error) {
	cfg := bloblock.ClientConfig{
		ConnectionString: s.connectionString, AccountURL: s.accountURL, Credential: cred, Container: s.container,
		RequestTimeout: requestTimeout, Observe: observe,
	}
	if s.storageDial != "" {
		hc, err := dialer.Client(s.storageDial, nil)
		if err != nil {
			return nil, usagef("invalid --storage-dial %q: %v", s.storageDial, err)
		}
		cfg.Transport = hc
	}
	return bloblock.NewContainerClient(cfg)
}

func runWorker(args []string, stdout, stderr io.Writer) error {
	o, err := parseOptions(args, stdout)
	if err != nil {
		return err
	}
	n, err := openNode(&o.options, o.electionConfig(), stderr)
	if err != nil {
		return err
	}
	defer n.close()
	// The leader task: the reference task on the ledger, or in shard mode
	// the pool's coordination, with the pool member as a companion.
	var leaderTask func(ctx context.Context, term int64) error
	var companions []companion
	if o.shards > 0 {
		shards, err := newShardMode(o, n.storage, n.cfg, n.log, n.write)
		if err != nil {
			return err
		}
		leaderTask = shards.lead
		companions = append(companions, shards)
		n.metrics.Registry.MustRegister(status.NewShardOwnership(shards.w.Owned), status.NewShardsUnowned(shards.unowned))
		n.metrics.AlsoUnusable(shards.w.Unusable)
	} else {
		task := &ledgerTask{c: n.storage, blob: o.blob, identity: o.identity, tick: o.tick, requestTimeout: n.cfg.RequestTimeout(), log: n.log}
		leaderTask = o.build.task(task.run, o.tick)
	}
	if _, err := n.newElector(election.Callbacks{OnStartedLeading: leaderTask}); err != nil {
		return err
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	return n.serve(ctx, companions...)
}
