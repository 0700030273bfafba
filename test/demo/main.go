// Command demo runs the election locally: a private Azurite, three workers,
// and a live table of who leads. Kill the leader and watch the takeover.
//
//	make demo                         (builds, then runs this with --worker bin/blobleader)
//	demo --worker bin/blobleader --auto   (non-interactive: kill the leader once, report the takeover, exit)
//	make demo-run                     (run mode: each worker is `blobleader run -- sleep …`)
//	make demo-shards                  (shard mode: each worker is `blobleader --shards 8`; who owns which shard, live)
//
// Keys: k kill the leader (SIGKILL, a crash), s stop it (SIGTERM, graceful),
// c (run mode) kill the leader's command only, f / g / p (shard mode) kill /
// stop / pause a follower, n (shard mode) start a new worker, r restart stopped workers,
// q quit. Every process it starts is stopped on
// exit, Ctrl-C, SIGTERM or SIGHUP (a closed terminal).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/term"

	"github.com/blobleader/blobleader/worker/azuritetest"
	"github.com/blobleader/blobleader/worker/shard"
	"github.com/blobleader/blobleader/worker/stalltest"
)

type worker struct {
	id      string
	addr    string // where it serves, from its start line ("" until read)
	logPath string
	logFrom int64 // where this process's lines begin in logPath
	cmd     *exec.Cmd
	exited  chan struct{}
	how     string // how it was stopped, for the table
}

type status struct {
	Identity string `json:"identity"`
	Role     string `json:"role"`
	Term     int64  `json:"term"`
	Leader   string `json:"leader"`
	Since    string `json:"since"`

	// Shard mode only: the shard leases the worker holds now and, on the
	// leader, its assignment.
	Shards     []int             `json:"shards"`
	Assignment *shard.Assignment `json:"assignment"`
}

type demo struct {
	bin, dir string
	runMode  bool     // workers are `blobleader run -- demoCommand`
	shards   int      // > 0: workers are `blobleader --shards N` (shardview.go)
	fault    string   // shard mode's --auto: "kill" or "pause" a follower
	extra    []string // --worker-flag: more flags for every worker
	az       *azuritetest.Server
	workers  []*worker
	http     *http.Client

	mu      sync.Mutex
	log     []string // recent happenings, newest last
	killed  time.Time
	killedW string
	whatHap string // what was done to killedW, e.g. "worker-2 was killed (SIGKILL)"
	lastLdr string
	lastTrm int64

	// Shard mode: only the goroutine that sweeps touches these.
	overlaps   *overlapCheck
	lastOwned  map[string][]int      // per worker: the shards of its last answer
	freeSince  []time.Time           // per shard: first sweep in which no answer claimed it, or zero
	departures []*departure          // killed or stopped workers whose shards are not all owned again
	paused     map[*worker]time.Time // SIGSTOPped workers and when to SIGCONT them
}

// maxShards keeps the shard view on one screen (a row per shard).
const maxShards = 32

// maxWorkers: identities are worker-1 … worker-9.
const maxWorkers = 9

func main() {
	bin := flag.String("worker", "bin/blobleader", "path to the blobleader binary")
	n := flag.Int("workers", 3, "how many workers to start (1–9)")
	auto := flag.Bool("auto", false, "non-interactive: wait for a leader, kill it (with --run: kill its command), wait for the takeover, print it and exit (0 on takeover, 1 if none within the bound, 3 if one only within the bound plus the stall the demo measured the machine to have: inconclusive)")
	runMode := flag.Bool("run", false, "run mode: each worker is `blobleader run -- "+strings.Join(demoCommand, " ")+"`; key c kills the leader's command only (a fast failover: the supervisor releases at once)")
	shards := flag.Int("shards", 0, fmt.Sprintf("shard mode (1–%d): each worker is `blobleader --shards N`; the screen shows which worker owns which shard, from the workers' /status; with --auto: kill a follower, wait until live workers own its shards again, check that no shard was seen owned by two workers at once", maxShards))
	fault := flag.String("fault", "kill", "with --shards --auto: what to do to the follower, kill (SIGKILL) or pause (SIGSTOP until its shards are owned by others, then SIGCONT: it must not claim them when it wakes)")
	var extra stringList
	flag.Var(&extra, "worker-flag", "one more flag for every worker, e.g. --worker-flag=--tick=100ms (repeatable)")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "demo — three workers electing a leader on a local Azurite.\n\nUsage: demo [--worker PATH] [--workers N] [--run | --shards N] [--auto]\n\nKeys: k kill the leader (SIGKILL), s stop it (SIGTERM), c (--run) kill the leader's command, f / g / p (--shards) kill / stop / pause a follower, n (--shards) start a new worker, r restart stopped workers, q quit.\n\nFlags:\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if *n < 1 || *n > maxWorkers {
		fmt.Fprintf(os.Stderr, "demo: invalid --workers %d: must be 1–%d\n", *n, maxWorkers)
		os.Exit(2)
	}
	if *shards < 0 || *shards > maxShards {
		fmt.Fprintf(os.Stderr, "demo: invalid --shards %d: must be 1–%d (0 or absent: the election alone)\n", *shards, maxShards)
		os.Exit(2)
	}
	if *fault != "kill" && *fault != "pause" {
		fmt.Fprintf(os.Stderr, "demo: invalid --fault %q: must be kill or pause\n", *fault)
		os.Exit(2)
	}
	if *fault != "kill" && (*shards == 0 || !*auto) {
		fmt.Fprintf(os.Stderr, "demo: invalid --fault %s without --shards and --auto: it picks the fault of the shard-mode script\n", *fault)
		os.Exit(2)
	}
	if *shards > 0 && *runMode {
		fmt.Fprintln(os.Stderr, "demo: invalid --shards with --run: shard mode is the worker's (`blobleader --shards N`), not run's; pass one of them")
		os.Exit(2)
	}
	if _, err := os.Stat(*bin); err != nil {
		fmt.Fprintf(os.Stderr, "demo: invalid --worker %s: %v (run `make build`)\n", *bin, err)
		os.Exit(2)
	}
	os.Exit(run(&demo{bin: *bin, runMode: *runMode, shards: *shards, fault: *fault, extra: extra}, *n, *auto))
}

// demoCommand is what each worker runs while it leads in run mode: a
// long-running stand-in for the user's program.
var demoCommand = []string{"sleep", "86399"}

// stringList is a repeatable string flag.
type stringList []string

func (l *stringList) String() string     { return strings.Join(*l, " ") }
func (l *stringList) Set(v string) error { *l = append(*l, v); return nil }

// run starts Azurite and n workers for d (its mode set by the flags) and
// runs the live view or, with auto, the script.
func run(d *demo, n int, auto bool) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	dir, err := os.MkdirTemp("", "blobleader-demo-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		return 1
	}
	d.dir, d.http = dir, &http.Client{Timeout: 500 * time.Millisecond}
	d.overlaps, d.lastOwned, d.freeSince, d.paused = newOverlapCheck(), map[string][]int{}, make([]time.Time, d.shards), map[*worker]time.Time{}
	defer d.cleanup()

	fmt.Println("starting Azurite (in memory, loopback only)…")
	startCtx, cancel := context.WithTimeout(ctx, 60*time.Second)
	d.az, err = azuritetest.Start(startCtx)
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		return 1
	}
	fmt.Printf("Azurite on %s; starting %d workers (logs and history in %s)…\n", d.az.BlobEndpoint(), n, dir)
	for i := 1; i <= n; i++ {
		w := &worker{id: fmt.Sprintf("worker-%d", i)}
		if err := d.start(w); err != nil {
			fmt.Fprintln(os.Stderr, "demo:", err)
			return 1
		}
		d.workers = append(d.workers, w)
	}
	if auto {
		machine.probe = stalltest.Start(stalltest.Default)
		defer machine.probe.Stop()
		script := d.auto
		if d.shards > 0 {
			script = d.autoShards
		}
		code := script(ctx)
		if code == 0 && machine.inconclusive {
			return 3
		}
		return code
	}
	return d.interactive(ctx)
}

// machine is --auto's CPU probe (docs/chaos.md#a-busy-machine): every wait
// lasts its bound plus the stall measured since it began, and a wait that
// ends past its bound but within that stall makes the run inconclusive
// (exit 3): it proved nothing, it is neither a pass nor a failure.
var machine struct {
	probe        *stalltest.Probe
	inconclusive bool
}

func (d *demo) start(w *worker) error {
	w.addr, w.how = "", ""
	w.logPath = filepath.Join(d.dir, w.id+".log")
	logf, err := os.OpenFile(w.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	fi, err := logf.Stat()
	if err != nil {
		logf.Close()
		return err
	}
	w.logFrom = fi.Size() // a restarted worker appends to its log
	// Port 0: the kernel picks a port nobody holds (a port picked free
	// beforehand can be taken before the worker listens); status reads it
	// back from the start line.
	args := []string{"--identity", w.id, "--listen", "127.0.0.1:0",
		"--history", d.historyPath(w), "--log-format", "json"}
	if d.runMode {
		args = append(append(append([]string{"run"}, args...), "--"), demoCommand...)
	}
	if d.shards > 0 {
		args = append(args, "--shards", fmt.Sprint(d.shards))
		d.overlaps.gap(w.id) // a new process: nothing it says continues what the last one said
	}
	args = append(args, d.extra...)
	w.cmd = exec.Command(d.bin, args...)
	w.cmd.Env = append(os.Environ(), "AZURE_STORAGE_CONNECTION_STRING="+d.az.ConnectionString())
	w.cmd.Stdout, w.cmd.Stderr = logf, logf
	if err := w.cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("start %s: %w", w.id, err)
	}
	w.exited = make(chan struct{})
	go func() { _ = w.cmd.Wait(); logf.Close(); close(w.exited) }()
	return nil
}

func (d *demo) historyPath(w *worker) string { return filepath.Join(d.dir, w.id+".jsonl") }

// commandPID is the pid of the command w's supervisor runs now, from its
// history: the last child_started without a child_exited after it.
func (d *demo) commandPID(w *worker) (int, bool) {
	b, err := os.ReadFile(d.historyPath(w))
	if err != nil {
		return 0, false
	}
	pid := 0
	for _, line := range strings.Split(string(b), "\n") {
		var r struct {
			Event string `json:"event"`
			PID   int    `json:"pid"`
		}
		if json.Unmarshal([]byte(line), &r) != nil {
			continue
		}
		switch r.Event {
		case "child_started":
			pid = r.PID
		case "child_exited":
			pid = 0
		}
	}
	return pid, pid > 0
}

// killCommand SIGKILLs the leader's command (its process group), not the
// supervisor: the supervisor sees it die, releases at once, and another
// worker's command starts within about a poll.
func (d *demo) killCommand() (*worker, int64, bool) {
	w, s, count := d.leader()
	if count != 1 {
		d.note("no single leader right now")
		return nil, 0, false
	}
	pid, ok := d.commandPID(w)
	if !ok {
		d.note("%s leads but runs no command right now", w.id)
		return nil, 0, false
	}
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	d.mu.Lock()
	d.killed, d.killedW, d.whatHap = time.Now(), w.id, "the command of "+w.id+" was killed"
	d.mu.Unlock()
	d.note("the command of %s (pid %d) killed (SIGKILL); its supervisor keeps running", w.id, pid)
	return w, s.Term, true
}

func (w *worker) alive() bool {
	select {
	case <-w.exited:
		return false
	default:
		return true
	}
}

func (d *demo) status(w *worker) (status, bool) {
	var s status
	if !w.alive() {
		return s, false
	}
	if w.addr == "" {
		if w.addr = startedListen(w.logPath, w.logFrom); w.addr == "" {
			return s, false // not listening yet
		}
	}
	resp, err := d.http.Get("http://" + w.addr + "/status")
	if err != nil {
		return s, false
	}
	defer resp.Body.Close()
	return s, json.NewDecoder(resp.Body).Decode(&s) == nil
}

// startedListen is the listen address in the first `worker started` line
// of the log at path from offset from, or "" while there is none.
func startedListen(path string, from int64) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	b, err := io.ReadAll(io.NewSectionReader(f, from, 1<<20))
	if err != nil {
		return ""
	}
	lines := strings.Split(string(b), "\n")
	for _, line := range lines[:len(lines)-1] { // the last is still being written
		var m struct{ Msg, Listen string }
		if json.Unmarshal([]byte(line), &m) == nil && m.Msg == "worker started" {
			return m.Listen
		}
	}
	return ""
}

// leader returns the worker that says it leads, if exactly one does.
func (d *demo) leader() (*worker, status, int) {
	var lw *worker
	var ls status
	count := 0
	for _, w := range d.workers {
		if s, ok := d.status(w); ok && s.Role == "leader" {
			lw, ls = w, s
			count++
		}
	}
	return lw, ls, count
}

func (d *demo) note(format string, args ...any) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.log = append(d.log, time.Now().Format("15:04:05.000")+"  "+fmt.Sprintf(format, args...))
	if len(d.log) > 8 {
		d.log = d.log[len(d.log)-8:]
	}
}

// watch notes leadership changes and measures takeovers after a kill/stop.
// It returns the single leader it saw (nil if there was not exactly one),
// so a caller that acts on that observation acts on what the log says.
func (d *demo) watch() (*worker, int64) {
	w, s, count := d.leader()
	if count != 1 {
		return nil, 0
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if w.id == d.lastLdr && s.Term == d.lastTrm {
		return w, s.Term
	}
	msg := fmt.Sprintf("%s leads, term %d", w.id, s.Term)
	if !d.killed.IsZero() && d.killedW != w.id {
		msg += fmt.Sprintf(" — took over %.1fs after %s", time.Since(d.killed).Seconds(), d.whatHap)
		d.killed = time.Time{}
	}
	d.lastLdr, d.lastTrm = w.id, s.Term
	d.log = append(d.log, time.Now().Format("15:04:05.000")+"  "+msg)
	if len(d.log) > 8 {
		d.log = d.log[len(d.log)-8:]
	}
	return w, s.Term
}

func (d *demo) stopLeader(sig syscall.Signal) {
	w, _, count := d.leader()
	if count != 1 {
		d.note("no single leader to stop right now")
		return
	}
	d.stop(w, sig)
}

// stopFollower stops a worker that answers as a follower, the first that
// owns a shard if any does.
func (d *demo) stopFollower(sig syscall.Signal) {
	pick := d.follower()
	if pick == nil {
		d.note("no follower to stop right now")
		return
	}
	d.stop(pick, sig)
}

// follower returns a worker that answers as a follower, the first that owns
// a shard if any does.
func (d *demo) follower() *worker {
	var pick *worker
	for _, w := range d.workers {
		s, ok := d.status(w)
		if !ok || s.Role == "leader" {
			continue
		}
		if len(s.Shards) > 0 {
			d.lastOwned[w.id] = s.Shards
			pick = w
			break
		}
		if pick == nil {
			pick = w
		}
	}
	return pick
}

// pauseFor is how long key p freezes a follower: past its lease, so its
// shards go to their standbys and it wakes to find them gone.
var pauseFor = shardTimings.Election.LeaseDuration + 5*time.Second

// pauseFollower SIGSTOPs a follower that owns shards; resumeDue wakes it.
func (d *demo) pauseFollower() {
	w := d.follower()
	if w == nil {
		d.note("no follower to pause right now")
		return
	}
	d.pause(w)
}

// pause SIGSTOPs w (a frozen process: no renew, no answer) and starts
// measuring how long until others own its shards.
func (d *demo) pause(w *worker) *departure {
	_ = w.cmd.Process.Signal(syscall.SIGSTOP)
	at := time.Now()
	d.paused[w] = at.Add(pauseFor) // interactive: resumeDue wakes it; --auto wakes it itself
	d.note("%s paused (SIGSTOP)", w.id)
	return d.depart(w, "paused (SIGSTOP)", at)
}

// resume SIGCONTs w.
func (d *demo) resume(w *worker) {
	_ = w.cmd.Process.Signal(syscall.SIGCONT)
	delete(d.paused, w)
	d.note("%s resumed (SIGCONT): its shards' leases expired while it slept; it must not claim them", w.id)
}

func (d *demo) resumeDue() {
	for w, at := range d.paused {
		if time.Now().After(at) {
			d.resume(w)
		}
	}
}

// addWorker starts worker-(n+1), up to maxWorkers.
func (d *demo) addWorker() {
	if len(d.workers) >= maxWorkers {
		d.note("already %d workers", maxWorkers)
		return
	}
	w := &worker{id: fmt.Sprintf("worker-%d", len(d.workers)+1)}
	if err := d.start(w); err != nil {
		d.note("start %s: %v", w.id, err)
		return
	}
	d.workers = append(d.workers, w)
	d.note("%s started", w.id)
}

// stop sends sig to w and starts measuring the takeover (of the leadership,
// and in shard mode of w's shards).
func (d *demo) stop(w *worker, sig syscall.Signal) *departure {
	how := "killed (SIGKILL)"
	if sig == syscall.SIGTERM {
		how = "stopped (SIGTERM)"
	}
	_ = w.cmd.Process.Signal(sig)
	at := time.Now()
	w.how = how
	d.mu.Lock()
	d.killed, d.killedW, d.whatHap = at, w.id, w.id+" was "+how
	d.mu.Unlock()
	d.note("%s %s", w.id, how)
	if d.shards > 0 {
		return d.depart(w, how, at)
	}
	return nil
}

func (d *demo) table(tty bool) string {
	var b strings.Builder
	if tty {
		b.WriteString("\033[H\033[2J")
	}
	fmt.Fprintf(&b, "blobleader demo — %d workers on Azurite %s   (lease 15s, poll 1s)\r\n\r\n", len(d.workers), d.az.BlobEndpoint())
	fmt.Fprintf(&b, "  %-10s %-7s %-10s %-14s %-10s %s\r\n", "IDENTITY", "PID", "ROLE", "TERM", "LEADER", "SINCE")
	for _, w := range d.workers {
		s, ok := d.status(w)
		switch {
		case ok:
			since := s.Since
			if t, err := time.Parse(time.RFC3339Nano, s.Since); err == nil {
				since = fmt.Sprintf("%.1fs ago", time.Since(t).Seconds())
			}
			role := s.Role
			if tty && role == "leader" {
				role = "\033[1;32mleader\033[0m    "
			}
			fmt.Fprintf(&b, "  %-10s %-7d %-10s %-14d %-10s %s\r\n", w.id, w.cmd.Process.Pid, role, s.Term, s.Leader, since)
		case w.alive():
			fmt.Fprintf(&b, "  %-10s %-7d %-10s\r\n", w.id, w.cmd.Process.Pid, "starting")
		default:
			fmt.Fprintf(&b, "  %-10s %-7s %-10s\r\n", w.id, "-", w.how)
		}
	}
	b.WriteString("\r\n")
	d.mu.Lock()
	for _, l := range d.log {
		b.WriteString("  " + l + "\r\n")
	}
	d.mu.Unlock()
	b.WriteString("\r\n  k kill the leader (crash: takeover after the lease expires, ~15s)   s stop it (graceful: ~1s)\r\n")
	if d.runMode {
		b.WriteString("  c kill the leader's command only (the supervisor releases at once: ~1s)\r\n")
	}
	b.WriteString("  r restart stopped workers   q quit\r\n")
	return b.String()
}

func (d *demo) interactive(ctx context.Context) int {
	tty := term.IsTerminal(int(os.Stdout.Fd()))
	keys := make(chan byte, 8)
	if term.IsTerminal(int(os.Stdin.Fd())) {
		old, err := term.MakeRaw(int(os.Stdin.Fd()))
		if err == nil {
			defer term.Restore(int(os.Stdin.Fd()), old)
		}
	}
	go func() {
		buf := make([]byte, 1)
		for {
			if _, err := os.Stdin.Read(buf); err != nil {
				if errors.Is(err, io.EOF) {
					return // no input: the table keeps running until Ctrl-C or SIGTERM
				}
				return
			}
			keys <- buf[0]
		}
	}()
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for {
		d.watch()
		d.resumeDue()
		if d.shards > 0 {
			fmt.Print(d.shardTable(d.sweep(), tty))
		} else {
			fmt.Print(d.table(tty))
		}
		select {
		case <-ctx.Done():
			return 0
		case k := <-keys:
			switch k {
			case 'k', 'K':
				d.stopLeader(syscall.SIGKILL)
			case 's', 'S':
				d.stopLeader(syscall.SIGTERM)
			case 'c', 'C':
				if d.runMode {
					d.killCommand()
				}
			case 'f', 'F':
				if d.shards > 0 {
					d.stopFollower(syscall.SIGKILL)
				}
			case 'g', 'G':
				if d.shards > 0 {
					d.stopFollower(syscall.SIGTERM)
				}
			case 'n', 'N':
				if d.shards > 0 {
					d.addWorker()
				}
			case 'p', 'P':
				if d.shards > 0 {
					d.pauseFollower()
				}
			case 'r', 'R':
				for _, w := range d.workers {
					if !w.alive() {
						if err := d.start(w); err != nil {
							d.note("restart %s: %v", w.id, err)
						} else {
							d.note("%s restarted", w.id)
						}
					}
				}
			case 'q', 'Q', 3: // 3: Ctrl-C in raw mode
				return 0
			}
		case <-tick.C:
		}
	}
}

// auto is the scripted run used by tests: one crash and its takeover.
func (d *demo) auto(ctx context.Context) int {
	wait := func(what string, within time.Duration, ok func() bool) bool { return waitFor(ctx, what, within, ok) }
	var first *worker
	var firstTerm int64
	if !wait("one leader", 20*time.Second, func() bool {
		w, s, c := d.leader()
		first, firstTerm = w, s.Term
		return c == 1
	}) {
		return 1
	}
	fmt.Print(d.table(false))
	// The first leader, noted as the live view notes it.
	d.watch()
	bound := 15*time.Second + 1100*time.Millisecond + 5*time.Second // L + 1.1·P + slack
	if d.runMode {
		if !wait("the leader's command", 10*time.Second, func() bool { _, ok := d.commandPID(first); return ok }) {
			return 1
		}
		pid, _ := d.commandPID(first)
		fmt.Printf("killing the command of the leader %s (term %d), pid %d, with SIGKILL\n", first.id, firstTerm, pid)
		if w, _, ok := d.killCommand(); !ok || w != first {
			fmt.Println("FAIL: the leader changed before its command could be killed")
			return 1
		}
		bound = 2*time.Second + 1100*time.Millisecond + 5*time.Second // the hand-off pause keeps the old one out, 1.1·P + slack
	} else {
		fmt.Printf("killing the leader %s (term %d) with SIGKILL\n", first.id, firstTerm)
		d.stop(first, syscall.SIGKILL)
	}
	killed := time.Now()
	var next *worker
	var nextTerm int64
	if !wait("a new leader", bound, func() bool {
		// One observation both notes the takeover (as the live view does)
		// and ends the wait, so the log always has the line.
		next, nextTerm = d.watch()
		return next != nil && next != first
	}) {
		return 1
	}
	fmt.Print(d.table(false))
	fmt.Printf("takeover: %s leads with term %d, %.1fs after the kill\n", next.id, nextTerm, time.Since(killed).Seconds())
	if d.runMode {
		if !wait("the new leader's command", 10*time.Second, func() bool { _, ok := d.commandPID(next); return ok }) {
			return 1
		}
		pid, _ := d.commandPID(next)
		fmt.Printf("%s runs the command as pid %d, %.1fs after the kill\n", next.id, pid, time.Since(killed).Seconds())
	}
	return 0
}

// waitFor polls ok every 100 ms until it holds (true) or within has passed
// or ctx ended (false, saying what was not seen). Under --auto, within
// counts the machine's stall since the wait began (machine): seen only
// thanks to it, the run is inconclusive, and waitFor says so.
func waitFor(ctx context.Context, what string, within time.Duration, ok func() bool) bool {
	start := time.Now()
	stall := func() time.Duration {
		if machine.probe == nil {
			return 0
		}
		return machine.probe.StallIn(start, time.Now())
	}
	for !ok() {
		if time.Since(start) > within+stall() || ctx.Err() != nil {
			fmt.Printf("FAIL: %s not seen within %s (the machine stalled %v meanwhile)\n", what, within, stall().Round(time.Millisecond))
			return false
		}
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
	if took := time.Since(start); took > within {
		machine.inconclusive = true
		fmt.Printf("INCONCLUSIVE: %s seen %.1fs after the wait began, past its bound %s, within the %v the machine stalled meanwhile (CPU probe)\n",
			what, took.Seconds(), within, stall().Round(time.Millisecond))
	}
	return true
}

// cleanup stops every process the demo started: workers gracefully (so they
// release the lease), then Azurite; nothing is left behind.
func (d *demo) cleanup() {
	running := 0
	for _, w := range d.workers {
		if w.alive() {
			_ = w.cmd.Process.Signal(syscall.SIGCONT) // a paused worker cannot act on SIGTERM
			_ = w.cmd.Process.Signal(syscall.SIGTERM)
			running++
		}
	}
	for _, w := range d.workers {
		select {
		case <-w.exited:
		case <-time.After(8 * time.Second):
			_ = w.cmd.Process.Kill()
			<-w.exited
		}
	}
	if d.az != nil {
		d.az.Stop()
	}
	fmt.Printf("\r\nstopped %s and Azurite; logs and history kept in %s\r\n", plural(running, "worker"), d.dir)
}

// plural is "1 worker", "2 workers".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
