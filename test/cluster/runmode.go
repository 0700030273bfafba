package cluster

import (
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
)

// LedgerCommandBinEnv names a prebuilt test command (test/cmd/ledgercmd) to
// use instead of building one.
const LedgerCommandBinEnv = "BLOBLEADER_LEDGERCMD_BIN"

var ledgerCmd struct {
	once sync.Once
	bin  string
	err  error
}

var noClone3 struct {
	once sync.Once
	bin  string
	err  error
}

// NoClone3Binary returns test/cmd/noclone3 (chaos.NoClone3's helper), built
// once per test binary (removed by Main).
func NoClone3Binary(tb testing.TB) string {
	tb.Helper()
	noClone3.once.Do(func() { noClone3.bin, noClone3.err = buildPackage(harnessModule, "./cmd/noclone3", "noclone3") })
	if noClone3.err != nil {
		tb.Fatalf("noclone3 binary: %v", noClone3.err)
	}
	return noClone3.bin
}

// RunCommand starts the workers in run mode: `blobleader run [the same
// flags, without --tick] -- command...`. Each supervisor runs command while
// it leads (docs/architecture.md, the run contract).
func RunCommand(command ...string) Option {
	return func(o *workerOpts) { o.command = slices.Clone(command) }
}

// modeArgs turns the worker's flags into run mode's when a command is set:
// "run" first, no --tick (run has no reference task), the command after "--".
func (o workerOpts) modeArgs(args []string) []string {
	if len(o.command) == 0 {
		return args
	}
	out := []string{"run"}
	for i := 0; i < len(args); i++ {
		if args[i] == "--tick" {
			i++ // and its value
			continue
		}
		out = append(out, args[i])
	}
	return append(append(out, "--"), o.command...)
}

// LedgerCommandBinary returns the run-mode test command:
// $BLOBLEADER_LEDGERCMD_BIN, or `go build ./cmd/ledgercmd` of this harness
// module, once per test binary (removed by Main).
func LedgerCommandBinary(tb testing.TB) string {
	tb.Helper()
	ledgerCmd.once.Do(func() {
		if p := os.Getenv(LedgerCommandBinEnv); p != "" {
			ledgerCmd.bin, ledgerCmd.err = filepath.Abs(p)
			return
		}
		ledgerCmd.bin, ledgerCmd.err = buildPackage(harnessModule, "./cmd/ledgercmd", "ledgercmd")
	})
	if ledgerCmd.err != nil {
		tb.Fatalf("ledger command binary: %v", ledgerCmd.err)
	}
	return ledgerCmd.bin
}

// DirectConnectionString reaches storage directly, not through any worker's
// proxy: what a supervised command uses, so that faults on its supervisor's
// link do not touch it (and an orphaned command can still write).
func (c *Local) DirectConnectionString() string { return ConnectionString(c.az.BlobEndpoint()) }

// ContainerName is the election's container (the commands' ledger lives
// there too).
func (c *Local) ContainerName() string { return c.containerName }

// HistoryFiles are the history files of every incarnation started so far.
func (c *Local) HistoryFiles() []string {
	c.mu.Lock()
	workers := slices.Clone(c.workers)
	c.mu.Unlock()
	var out []string
	for _, w := range workers {
		w.mu.Lock()
		for _, inc := range w.all {
			out = append(out, inc.history)
		}
		w.mu.Unlock()
	}
	return out
}
