// Command ledgercmd is the test command of run mode's scenarios: the
// COMMAND a `blobleader run` supervisor starts while it leads. It appends to
// a fenced ledger (worker/ledger) with the term its supervisor gives it in
// BLOBLEADER_TERM, as BLOBLEADER_IDENTITY, every --interval, and reports
// every attempt as one JSON line of --activity (checker.Activity: holder,
// term, pid, at, what), so the checker can judge the commands on what they
// did and the scenarios can see a fenced write refused.
//
// Behaviours the scenarios need:
//
//	(default)         SIGTERM or SIGINT: report "stopped", exit 0
//	--ignore-term     SIGTERM and SIGINT are ignored (only SIGKILL ends it)
//	--grandchild      also start a copy of itself in the same process group
//	                  that ignores SIGTERM, SIGINT and SIGHUP and reports
//	                  "alive" every 50 ms (it writes no ledger)
//	--exit-after D    exit on its own after D, with --exit-code
//	--manager         also start a daemonized manager (a new session) that
//	                  starts a job every second (at most 20), each like the
//	                  grandchild, reporting "job started" then "alive"
//	SIGUSR1           (chaos.Escape) start two more such grandchildren that
//	                  leave the process group, as a cron daemon's jobs do:
//	                  one in a new session, one in a new process group
//	SIGUSR2           (chaos.ForkWalker) start a fork-walker that reports
//	                  "walker alive N" to the activity log as it hops
//
// It keeps appending after a refusal: an orphaned command does not know it
// is one, and each refused write is evidence that the ledger fenced it.
//
// Exit codes: --exit-code when --exit-after elapses, 0 on SIGTERM/SIGINT,
// 2 for bad flags or a missing BLOBLEADER_TERM / BLOBLEADER_IDENTITY.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/blobleader/blobleader/chaos"

	"github.com/blobleader/blobleader/worker/election/bloblock"
	"github.com/blobleader/blobleader/worker/ledger"
)

type options struct {
	conn, container, blob string
	interval              time.Duration
	activity              string
	ignoreTerm            bool
	grandchild            bool
	asGrandchild          bool
	manager, asManager    bool
	asJob                 bool
	exitAfter             time.Duration
	exitCode              int
}

func main() {
	var o options
	fs := flag.NewFlagSet("ledgercmd", flag.ContinueOnError)
	fs.StringVar(&o.conn, "connection-string", os.Getenv("AZURE_STORAGE_CONNECTION_STRING"), "storage connection string (default $AZURE_STORAGE_CONNECTION_STRING)")
	fs.StringVar(&o.container, "container", "leases", "container of the ledger")
	fs.StringVar(&o.blob, "blob", "command", `the ledger lives under "<blob>-ledger/"`)
	fs.DurationVar(&o.interval, "interval", 200*time.Millisecond, "time between appends")
	fs.StringVar(&o.activity, "activity", "", "append one JSON line per attempt to this file (required)")
	fs.BoolVar(&o.ignoreTerm, "ignore-term", false, "ignore SIGTERM and SIGINT")
	fs.BoolVar(&o.grandchild, "grandchild", false, "start a grandchild in the same process group that ignores SIGTERM, SIGINT and SIGHUP")
	fs.BoolVar(&o.asGrandchild, "as-grandchild", false, "internal: be that grandchild")
	fs.BoolVar(&o.manager, "manager", false, "start a daemonized manager that starts a job every second")
	fs.BoolVar(&o.asManager, "as-manager", false, "internal: be that manager")
	fs.BoolVar(&o.asJob, "as-job", false, "internal: be one of its jobs")
	fs.DurationVar(&o.exitAfter, "exit-after", 0, "exit on its own after this long (0: never)")
	fs.IntVar(&o.exitCode, "exit-code", 0, "exit status with --exit-after")
	if err := fs.Parse(os.Args[1:]); err != nil {
		os.Exit(2)
	}
	term, err := strconv.ParseInt(os.Getenv("BLOBLEADER_TERM"), 10, 64)
	identity := os.Getenv("BLOBLEADER_IDENTITY")
	switch {
	case err != nil || term <= 0:
		fail("BLOBLEADER_TERM %q: want a positive integer (run this under `blobleader run`)", os.Getenv("BLOBLEADER_TERM"))
	case identity == "":
		fail("BLOBLEADER_IDENTITY is empty (run this under `blobleader run`)")
	case o.activity == "":
		fail("--activity is required")
	case o.conn == "" && !o.asGrandchild && !o.asManager && !o.asJob:
		fail("--connection-string (or $AZURE_STORAGE_CONNECTION_STRING) is required")
	}
	rep, err := openReporter(o.activity, identity, term)
	if err != nil {
		fail("%v", err)
	}
	switch {
	case o.asGrandchild:
		grandchild(rep, "grandchild started")
	case o.asJob:
		grandchild(rep, "job started")
	case o.asManager:
		manager(rep)
	}
	os.Exit(run(o, rep, term, identity))
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "ledgercmd: "+format+"\n", args...)
	os.Exit(2)
}

// reporter appends activity lines; each is one write to an O_APPEND file,
// so lines from the command and its grandchild never interleave.
type reporter struct {
	mu     sync.Mutex
	f      *os.File
	holder string
	term   int64
}

func openReporter(path, holder string, term int64) (*reporter, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	return &reporter{f: f, holder: holder, term: term}, nil
}

func (r *reporter) report(what string) {
	line, _ := json.Marshal(struct {
		Holder string    `json:"holder"`
		Term   int64     `json:"term"`
		PID    int       `json:"pid"`
		At     time.Time `json:"at"`
		What   string    `json:"what"`
	}{r.holder, r.term, os.Getpid(), time.Now().UTC(), what})
	r.mu.Lock()
	defer r.mu.Unlock()
	_, _ = r.f.Write(append(line, '\n'))
}

// grandchild ignores the polite signals and reports it is alive until
// SIGKILL.
func grandchild(rep *reporter, started string) {
	signal.Ignore(syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	rep.report(started)
	for {
		rep.report("alive")
		time.Sleep(50 * time.Millisecond)
	}
}

func run(o options, rep *reporter, term int64, identity string) int {
	rep.report("started")
	sigs := make(chan os.Signal, 1)
	if o.ignoreTerm {
		signal.Ignore(syscall.SIGTERM, syscall.SIGINT)
	} else {
		signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	}
	if o.grandchild {
		if err := startGrandchild(nil); err != nil {
			rep.report("grandchild failed: " + err.Error())
			return 1
		}
	}
	if o.manager {
		if err := startCopy("--as-manager", &syscall.SysProcAttr{Setsid: true}); err != nil {
			rep.report("manager failed: " + err.Error())
			return 1
		}
	}
	escape := make(chan os.Signal, 1)
	signal.Notify(escape, chaos.EscapeSignal)
	walk := make(chan os.Signal, 1)
	signal.Notify(walk, chaos.WalkerSignal)
	var exit <-chan time.Time
	if o.exitAfter > 0 {
		exit = time.After(o.exitAfter)
	}
	c, err := bloblock.NewContainerClient(bloblock.ClientConfig{ConnectionString: o.conn, Container: o.container, RequestTimeout: 2 * time.Second})
	if err != nil {
		rep.report("storage client: " + err.Error())
		return 1
	}
	var w *ledger.Writer
	tick := time.NewTicker(o.interval)
	defer tick.Stop()
	for {
		step(c, o, rep, term, identity, &w)
		select {
		case <-escape:
			for _, attr := range []*syscall.SysProcAttr{{Setsid: true}, {Setpgid: true}} {
				if err := startGrandchild(attr); err != nil {
					rep.report("escaping job failed: " + err.Error())
				}
			}
			rep.report("escaping jobs started")
		case <-walk:
			if err := chaos.StartForkWalker(o.activity); err != nil {
				rep.report("walker failed: " + err.Error())
			} else {
				rep.report("walker started")
			}
		case sig := <-sigs:
			rep.report("stopped by " + sig.String())
			return 0
		case <-exit:
			rep.report(fmt.Sprintf("exiting %d on its own", o.exitCode))
			return o.exitCode
		case <-tick.C:
		}
	}
}

// startGrandchild starts a copy of this command as a grandchild (see
// grandchild), with attr (nil: in our own process group). It is not waited
// for: it is left to the supervisor (a subreaper) to reap.
func startGrandchild(attr *syscall.SysProcAttr) error { return startCopy("--as-grandchild", attr) }

// startCopy starts a copy of this command in role (an --as-… flag), with
// attr (nil: in our own process group), not waited for.
func startCopy(role string, attr *syscall.SysProcAttr) error {
	args := append([]string{role}, os.Args[1:]...)
	gc := exec.Command(os.Args[0], args...)
	gc.Stdout, gc.Stderr = os.Stdout, os.Stderr
	gc.SysProcAttr = attr
	return gc.Start()
}

// manager is a daemonized process manager: it ignores the polite signals
// and starts a job every second, at most maxJobs, each like the grandchild.
// Jobs it starts after the command's shim died are children of a process
// whose parent is gone: only a supervisor that keeps the whole lineage in
// view reaches them.
func manager(rep *reporter) {
	const maxJobs = 20
	signal.Ignore(syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	rep.report("manager started")
	for n := 0; ; n++ {
		if n < maxJobs {
			if err := startCopy("--as-job", nil); err != nil {
				rep.report("job failed: " + err.Error())
			}
		}
		rep.report("alive")
		time.Sleep(time.Second)
	}
}

// step opens the ledger for our term if not yet open, then appends once.
func step(c *container.Client, o options, rep *reporter, term int64, identity string, w **ledger.Writer) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Second)
	defer cancel()
	if *w == nil {
		nw, err := ledger.Open(ctx, c, o.blob, term, identity, ledger.Options{})
		if err != nil {
			rep.report(outcome("open", err))
			return
		}
		*w = nw
		rep.report("open ok")
	}
	e, err := (*w).Append(ctx)
	if err != nil {
		rep.report(outcome("append", err))
		return
	}
	rep.report(fmt.Sprintf("append ok seq %d", e.Seq))
}

func outcome(op string, err error) string {
	if errors.Is(err, ledger.ErrFenced) {
		return op + " fenced: " + err.Error()
	}
	return op + " error: " + err.Error()
}
