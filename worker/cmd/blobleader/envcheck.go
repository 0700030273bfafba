package main

import (
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync/atomic"
)

// A BLOBLEADER_* variable that no command reads is most likely a typo of
// one that does (BLOBLEADER_LEASE_DURATON): ignoring it silently would
// leave the default in force unseen, while a misspelt flag is refused. It
// is warned about — one WARN line per name, with the nearest known name —
// and never refused: a variable meant for another tool must not stop a
// worker (docs/architecture.md#worker-contracts).

// envNotFlags are the BLOBLEADER_* variables blobleader reads or sets that
// are no flag's env twin.
var envNotFlags = []string{tokenEnv, envTerm, envIdentity}

// envOthers are prefixes of BLOBLEADER_* variables that belong to others:
// the test harness's (chaos, Azure suite, Azurite) and the supervisor's
// own processes'.
var envOthers = []string{"BLOBLEADER_CHAOS_", "BLOBLEADER_AZURE_", "BLOBLEADER_AZURITE_", "BLOBLEADER_GUARD_", "BLOBLEADER_REGISTRY_"}

// envHarness are the BLOBLEADER_* variables the repository's make targets
// and test harness set for their own programs (make test sets
// BLOBLEADER_RETRY_LOG for every test, whose workers inherit it): not
// blobleader's, and not typos of its names. TestEnv_EveryNameTheRepository-
// UsesIsKnown keeps this list whole.
var envHarness = []string{
	"BLOBLEADER_RETRY_LOG", "BLOBLEADER_RETRY_HELPER", "BLOBLEADER_WORKER_BIN", "BLOBLEADER_UNSAFE_WORKER_BIN",
	"BLOBLEADER_LEDGERCMD_BIN", "BLOBLEADER_ORPHAN_CHECK_CHILD", "BLOBLEADER_REPORT_OUT", "BLOBLEADER_TF_REHEARSAL",
	"BLOBLEADER_VERIFY_SAMPLE",
}

// unknownVar is a BLOBLEADER_* variable of the environment no command
// reads, and the known name nearest to it ("" when none is near).
type unknownVar struct{ name, nearest string }

// unknownEnv lists the environment's BLOBLEADER_* variables that no
// command reads, in order.
func unknownEnv() []unknownVar {
	known := knownEnv()
	short := make([]string, len(known))
	for i, k := range known {
		short[i] = strings.TrimPrefix(k, "BLOBLEADER_")
	}
	var out []unknownVar
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(name, "BLOBLEADER_") || knownName(name, known) {
			continue
		}
		near := nearest(strings.TrimPrefix(name, "BLOBLEADER_"), short)
		if near != "" {
			near = "BLOBLEADER_" + near
		}
		out = append(out, unknownVar{name: name, nearest: near})
	}
	slices.SortFunc(out, func(a, b unknownVar) int { return strings.Compare(a.name, b.name) })
	return out
}

// knownName reports whether name is in known (knownEnv) or belongs to
// others (envHarness, envOthers).
func knownName(name string, known []string) bool {
	return slices.Contains(known, name) || slices.Contains(envHarness, name) ||
		slices.ContainsFunc(envOthers, func(p string) bool { return strings.HasPrefix(name, p) })
}

// knownEnv is every variable a command reads: each flag's env twin, of
// every command, and envNotFlags.
func knownEnv() []string {
	var floor string
	sets := []*cmdFlags{
		(&workerOptions{}).flags(io.Discard),
		(&runOptions{}).flags("blobleader run", io.Discard, ""),
		(&lockOptions{run: &runOptions{}}).flags(io.Discard),
		(&locksOptions{}).flags(io.Discard),
		(&ledgerOptions{}).flags(io.Discard),
		(&shardsOptions{}).flags(io.Discard),
		(&recoverOptions{}).flags(io.Discard, &floor),
		(&statusOptions{}).flags(io.Discard),
	}
	known := slices.Clone(envNotFlags)
	for _, fs := range sets {
		fs.VisitAll(func(f *flag.Flag) { known = append(known, envName(f.Name)) })
	}
	slices.Sort(known)
	return slices.Compact(known)
}

// unknownEnvLogged says whether this run of a command has given its log
// the unknown variables (logUnknownEnv): a refusal after that does not
// tell them again on stderr (main.go's run resets it).
var unknownEnvLogged atomic.Bool

// logUnknownEnv writes the WARN line of each unknown variable to log.
func logUnknownEnv(log *slog.Logger) {
	unknownEnvLogged.Store(true)
	for _, v := range unknownEnv() {
		log.Warn("environment variable not read by any blobleader command: ignored", "event", "unknown_env", "name", v.name, "did_you_mean", v.nearest)
	}
}

// printUnknownEnv says the same on w, for the commands that write no log.
func printUnknownEnv(w io.Writer) {
	for _, v := range unknownEnv() {
		hint := ""
		if v.nearest != "" {
			hint = fmt.Sprintf(" (did you mean %s?)", v.nearest)
		}
		fmt.Fprintf(w, "blobleader: warning: %s is not read by any blobleader command: ignored%s\n", v.name, hint)
	}
}
