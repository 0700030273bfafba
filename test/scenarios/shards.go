package scenarios

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/blobleader/blobleader/chaos"
	"github.com/blobleader/blobleader/test/checker"
	"github.com/blobleader/blobleader/test/cluster"
	"github.com/blobleader/blobleader/test/report"
	"github.com/blobleader/blobleader/worker/shard"
)

// Shard scenarios: a --shards pool under faults, judged by the
// election's rules and by checker.CheckShards.

// ShardScenario is a scenario run with --shards Shards.
type ShardScenario struct {
	Name    string
	Workers int // started before Run
	Shards  int // N
	// Run injects the faults and waits on their effects; n is N.
	Run func(t *testing.T, c cluster.Cluster, n int)
	// Args are worker flags beyond --shards (nil: none).
	Args []string
}

var (
	ShardsFollowerKilled   = ShardScenario{Name: "ShardsFollowerKilled", Workers: 3, Shards: 8, Run: shardsFollowerKilled}
	ShardsLeaderKilled     = ShardScenario{Name: "ShardsLeaderKilled", Workers: 3, Shards: 8, Run: shardsLeaderKilled}
	ShardsJoinThenLeave    = ShardScenario{Name: "ShardsJoinThenLeave", Workers: 2, Shards: 8, Run: shardsJoinThenLeave}
	ShardsPartitioned      = ShardScenario{Name: "ShardsPartitioned", Workers: 3, Shards: 8, Run: shardsPartitioned}
	ShardsStorageOutage    = ShardScenario{Name: "ShardsStorageOutage", Workers: 3, Shards: 8, Run: shardsOutage}
	ShardsRollingRestart   = ShardScenario{Name: "ShardsRollingRestart", Workers: 3, Shards: 8, Run: shardsRollingRestart}
	ShardsLeaveAfterOutage = ShardScenario{Name: "ShardsLeaveAfterOutage", Workers: 3, Shards: 8, Run: shardsLeaveAfterOutage}
	// A 6 s watchdog (the least the combination rules allow at these
	// timings) makes four members enough to show a pass that reads them one
	// by one: 4 × 1.8 s.
	ShardsSlowMemberReads = ShardScenario{Name: "ShardsSlowMemberReads", Workers: 4, Shards: 8, Run: shardsSlowMemberReads,
		Args: []string{"--watchdog-timeout", "6s"}}
)

// RunShardScenario runs s on backend Repeat(t) times and fails t on any
// violation of the election's or the shard rules.
func RunShardScenario(t *testing.T, backend Backend, s ShardScenario) {
	t.Helper()
	repeatRuns(t, func(t *testing.T) {
		c := backend(t, s.Workers, cluster.Args(append([]string{"--shards", fmt.Sprint(s.Shards)}, s.Args...)...))
		s.Run(t, c, s.Shards)
		_, res, sres := JudgeShards(t, c, ShardJudging{Shards: s.Shards, Name: reportName(t)})
		judged(t, "election and shards", checker.Compose(res.Verdict, sres.Verdict))
	})
}

// ShardParams are the shard checker's parameters for a cluster's timings.
func ShardParams(p cluster.Params) checker.ShardParams {
	return checker.ShardParams{Params: CheckerParams(p)}
}

// settle is the checker's balance bound for the cluster's timings.
func settle(p cluster.Params) time.Duration { return checker.DefaultSettle(CheckerParams(p)) }

// ShardJudging says how JudgeShards reads a shard pool's run and where it
// reports; only Shards and Name are required, the rest default to the local
// suite's choices (the Azure suite sets them for its deployment).
type ShardJudging struct {
	Shards int    // N
	Name   string // names the shard timeline (<Name>-shards.svg) and the report
	Out    string // directory for the timeline and the report; "": OutDir(t)

	Timeout   time.Duration           // bound on healing, collecting and reading the ledgers; 0: 2 min
	Window    time.Duration           // the liveness window History waits out; 0: 2·max(renew interval, P) + 1 s
	ClockSkew time.Duration           // the checker's tolerance between clocks; 0 locally
	Files     func([]string) []string // keeps the history files to judge; nil: all
	// Retry runs one storage read (the run, a shard's ledger), retrying
	// what it judges transient; nil: one attempt.
	Retry func(ctx context.Context, what string, read func() error) error
	// Report writes the scenario report of the run and of every violation
	// (the election's and the shards'); nil: none.
	Report func(out string, run checker.Run, all checker.Result)
}

// JudgeShards is Judge for a shard pool: it heals the cluster, collects the
// run and checks it with CheckShardRun, then writes the shard timeline and
// logs ownership, balance and failovers. It fails t when the run cannot be
// collected or checked; violations are in the results for the caller.
func JudgeShards(t *testing.T, c cluster.Cluster, o ShardJudging) (checker.ShardRun, checker.Result, checker.ShardResult) {
	t.Helper()
	p := c.Params()
	timeout, window, out := o.Timeout, o.Window, o.Out
	if timeout == 0 {
		timeout = 2 * time.Minute
	}
	if window == 0 {
		window = livenessWindow(p)
	}
	if out == "" {
		out = OutDir(t)
	}
	retry := readOnceUnless(o.Retry)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := c.Heal(ctx); err != nil {
		t.Errorf("heal: %v", err)
	}
	h, err := c.History(ctx, window)
	if err != nil {
		t.Fatalf("history: %v", err)
	}
	if o.Files != nil {
		h.Files = o.Files(h.Files)
	}
	var run checker.Run
	if err := retry(ctx, "collect the run", func() (err error) { run, err = Collect(ctx, c, h); return err }); err != nil {
		t.Fatalf("collect run: %v", err)
	}
	cp := CheckerParams(p)
	cp.ClockSkew = o.ClockSkew
	srun, res, sres, err := CheckShardRun(ctx, c, run, o.Shards, cp, retry)
	if err != nil {
		t.Fatal(err)
	}
	if o.Report != nil {
		all := res
		all.Verdict = checker.Compose(res.Verdict, sres.Verdict)
		o.Report(out, srun.Run, all)
	}
	if f, err := os.Create(filepath.Join(out, o.Name+"-shards.svg")); err != nil {
		t.Errorf("shard timeline: %v", err)
	} else {
		if err := report.WriteShardSVG(f, srun, sres); err != nil {
			t.Errorf("shard timeline: %v", err)
		}
		f.Close()
		t.Logf("shard timeline: %s", f.Name())
	}
	if os.Getenv(EnvOut) != "" {
		keep(t, filepath.Join(out, o.Name), h)
	}
	if len(srun.Events) > 0 {
		t.Logf("shard ownership over time:\n%s", checker.ShardLanes(sres, srun.Events[0].T))
	}
	for _, b := range sres.Balance {
		t.Logf("balance %v after the change at %s: members %v own %v; %d moves (minimum %d)", settle(p), b.Change.Format("15:04:05.000"), b.Members, b.Counts, b.Moves, b.Minimum)
	}
	for s := range o.Shards {
		for _, fo := range sres.PerShard[s].Failovers {
			t.Logf("shard %d failover after %s on %s: %v (bound %v, basis %s)%s", s, fo.Kind, fo.Target, fo.Duration.Round(time.Millisecond), fo.Bound, fo.Basis, inconclusive(fo))
		}
	}
	for _, v := range append(res.Stalled, sres.Stalled...) {
		t.Logf("inconclusive: %s", v)
	}
	if run.Sched != nil {
		t.Logf("%s", schedLine(run.Sched))
		noteStall(t, run.Sched)
	}
	return srun, res, sres
}

// CheckShardRun checks a shard pool's run: the election's rules on its
// election events (in shard mode the election has no ledger: the leader's
// task coordinates) and the shard rules on its shard events and the n
// shards' ledgers, read back from c's storage through retry (nil: once).
func CheckShardRun(ctx context.Context, c cluster.Cluster, run checker.Run, n int, p checker.Params,
	retry func(ctx context.Context, what string, read func() error) error) (checker.ShardRun, checker.Result, checker.ShardResult, error) {
	retry = readOnceUnless(retry)
	run.Ledger = nil
	res, err := checker.Check(run, p)
	if err != nil {
		return checker.ShardRun{}, res, checker.ShardResult{}, fmt.Errorf("checker: %w", err)
	}
	srun := checker.ShardRun{Run: run, Shards: n, Ledgers: map[int][]checker.LedgerEntry{}, ShardPaths: map[int]string{}}
	layout := shard.Layout{Blob: c.LockBlob()}
	for s := range n {
		if p, ok := blobPath(c, layout.Shard(s)); ok {
			srun.ShardPaths[s] = p
		}
	}
	for s := range n {
		var es []checker.LedgerEntry
		if err := retry(ctx, "read shard ledger", func() (err error) {
			es, err = ReadLedger(ctx, c.Storage(), layout.Ledger(s))
			return err
		}); err != nil {
			return srun, res, checker.ShardResult{}, fmt.Errorf("shard %d ledger: %w", s, err)
		}
		srun.Ledgers[s] = es
	}
	sres, err := checker.CheckShards(srun, checker.ShardParams{Params: p})
	if err != nil {
		return srun, res, sres, fmt.Errorf("shard checker: %w", err)
	}
	return srun, res, sres, nil
}

// readOnceUnless is retry, or a single attempt when retry is nil.
func readOnceUnless(retry func(ctx context.Context, what string, read func() error) error) func(ctx context.Context, what string, read func() error) error {
	if retry != nil {
		return retry
	}
	return func(_ context.Context, _ string, read func() error) error { return read() }
}

// departs injects f (a crash or a graceful stop) on w and expects the pool
// balanced again within the settle bound with only w's shards moved from
// before; the checker then judges the balance from the fault on.
func departs(t *testing.T, c cluster.Cluster, n int, f chaos.Fault, w cluster.Worker, before map[int]string) {
	t.Helper()
	inject(t, c, f, w)
	at := time.Now()
	after := waitBalanced(t, c, n, settle(c.Params())+slack)
	expectOnlyMoved(t, before, after, w.Identity())
	settleAfter(t, c, at)
}

// gracefulLeave is a SIGTERM with time for the task to stop and the leases
// to be released.
func gracefulLeave(p cluster.Params) chaos.Fault {
	return &chaos.Stop{Grace: (p.ShutdownGrace + 10*time.Second).Milliseconds()}
}

// waitBalanced waits until the running workers own every shard once,
// ⌊N/M⌋ or ⌈N/M⌉ each, and returns who owns what.
func waitBalanced(t *testing.T, c cluster.Cluster, n int, timeout time.Duration) map[int]string {
	t.Helper()
	wt := waitOn(c, timeout)
	var last string
	for !wt.over() {
		owner := map[int]string{}
		counts := map[string]int{}
		ok := true
		var live []cluster.Worker
		for _, w := range c.Workers() {
			if w.Running() {
				live = append(live, w)
			}
		}
		for _, w := range live {
			st, err := w.Status(ctxFor(t, 2*time.Second))
			if err != nil {
				ok = false
				continue
			}
			for _, s := range st.Shards {
				if o, dup := owner[s]; dup {
					ok = false
					last = fmt.Sprintf("shard %d claimed by %s and %s", s, o, st.Identity)
				}
				owner[s] = st.Identity
				counts[st.Identity]++
			}
		}
		q := n / max(len(live), 1)
		for _, w := range live {
			k := counts[w.Identity()]
			ok = ok && (k == q || k == q+1)
		}
		if ok && len(owner) == n {
			return owner
		}
		if last == "" || ok {
			last = fmt.Sprintf("owners %v, counts %v", owner, counts)
		}
		hold(t, 200*time.Millisecond)
	}
	wt.fatal(t, "the %d shards were not balanced over the running workers within %v; last: %s", n, wt, last)
	return nil
}

// settleAfter holds until the checker can judge the balance after the
// change at `at`: Settle has passed, plus a second.
func settleAfter(t *testing.T, c cluster.Cluster, at time.Time) {
	holdUntil(t, at.Add(settle(c.Params())+time.Second))
}

// shardsFollowerKilled: a follower is killed (SIGKILL, no restart). Its
// shards go to their standbys within L + P·1.1 + ε of its last renew, the
// others stay where they are, and the pool is balanced over the two left.
func shardsFollowerKilled(t *testing.T, c cluster.Cluster, n int) {
	p := c.Params()
	leader := waitLeader(t, c, takeover(p))
	waitBalanced(t, c, n, settle(p)+slack)
	waitStandbys(t, c, n, settle(p)+slack) // the bound below assumes one (docs: not guaranteed without)
	before := waitBalanced(t, c, n, settle(p)+slack)
	var victim cluster.Worker
	for _, w := range c.Workers() {
		if w.Identity() != leader.Identity() {
			victim = w
		}
	}
	departs(t, c, n, &chaos.Crash{}, victim, before)
}

// shardsLeaderKilled: the election's leader (which also owns shards) is
// killed. A new leader adopts the published assignment: only the dead
// leader's shards move.
func shardsLeaderKilled(t *testing.T, c cluster.Cluster, n int) {
	p := c.Params()
	waitBalanced(t, c, n, settle(p)+slack)
	leader := waitLeader(t, c, takeover(p))
	waitStandbys(t, c, n, settle(p)+slack) // the bound below assumes one (docs: not guaranteed without)
	before := waitBalanced(t, c, n, settle(p)+slack)
	crash := &chaos.Crash{}
	inject(t, c, crash, leader)
	at := time.Now()
	waitLeader(t, c, takeover(p), leader.Identity())
	after := waitBalanced(t, c, n, settle(p)+slack)
	expectOnlyMoved(t, before, after, leader.Identity())
	settleAfter(t, c, at)
}

// expectOnlyMoved fails t if a shard not owned by gone changed owner.
func expectOnlyMoved(t *testing.T, before, after map[int]string, gone string) {
	t.Helper()
	var moved []int
	for s, o := range before {
		if o != gone && after[s] != o {
			moved = append(moved, s)
		}
	}
	slices.Sort(moved)
	if len(moved) > 0 {
		t.Fatalf("shards %v changed owner although only %s left (before %v, after %v)", moved, gone, before, after)
	}
}

// shardsJoinThenLeave: a worker joins a balanced pool and receives only its
// share (nothing else moves); once settled, a follower stops gracefully and
// only its shards move, each taken within P·1.1 + ε of its release.
func shardsJoinThenLeave(t *testing.T, c cluster.Cluster, n int) {
	p := c.Params()
	leader := waitLeader(t, c, takeover(p))
	waitBalanced(t, c, n, settle(p)+slack)
	joinBalanced(t, c, n)

	var leaver cluster.Worker
	for _, w := range c.Workers() {
		if w.Identity() != leader.Identity() && w.Running() {
			leaver = w
		}
	}
	waitStandbys(t, c, n, settle(p)+slack)
	before := waitBalanced(t, c, n, slack)
	departs(t, c, n, gracefulLeave(p), leaver, before)
}

// shardsPartitioned: a follower is cut off from storage for longer than L.
// Its shard tasks stop at their renew deadlines, the standbys take the
// shards once the leases expire, and after the partition heals it rejoins
// and the pool is balanced again over all three.
func shardsPartitioned(t *testing.T, c cluster.Cluster, n int) {
	p := c.Params()
	leader := waitLeader(t, c, takeover(p))
	waitBalanced(t, c, n, settle(p)+slack)
	waitStandbys(t, c, n, settle(p)+slack)
	var victim cluster.Worker
	for _, w := range c.Workers() {
		if w.Identity() != leader.Identity() {
			victim = w
		}
	}
	cut := &chaos.Partition{}
	inject(t, c, cut, victim)
	// The others own every shard once the victim's leases have expired.
	wt := waitOn(c, takeover(p)+slack)
	for {
		owned := map[int]bool{}
		for _, w := range c.Workers() {
			if w.Identity() == victim.Identity() {
				continue
			}
			if st, err := w.Status(ctxFor(t, 2*time.Second)); err == nil {
				for _, s := range st.Shards {
					owned[s] = true
				}
			}
		}
		if len(owned) == n {
			break
		}
		if wt.over() {
			wt.fatal(t, "the others did not own all %d shards within %v of cutting %s off (own %v)", n, takeover(p)+slack, victim.Identity(), owned)
		}
		hold(t, 200*time.Millisecond)
	}
	if st, err := victim.Status(ctxFor(t, 2*time.Second)); err != nil || len(st.Shards) != 0 {
		t.Fatalf("the cut-off %s still claims shards %v (err %v) after their leases expired", victim.Identity(), st.Shards, err)
	}
	remove(t, c, cut)
	healed := time.Now()
	waitBalanced(t, c, n, settle(p)+slack)
	settleAfter(t, c, healed)
}

// shardsOutage: storage is down for everyone for 30 s. Every shard task stops
// at its renew deadline; after the outage the pool is balanced again (the
// owners, not the standbys, win their shards back).
func shardsOutage(t *testing.T, c cluster.Cluster, n int) {
	p := c.Params()
	healed, _ := outageForEveryone(t, c, n, 30*time.Second)
	waitBalanced(t, c, n, settle(p)+slack)
	settleAfter(t, c, healed)
}

// outageForEveryone takes storage away from every worker of a balanced pool
// for d (longer than D: every shard task must have stopped by its end), and
// returns when it healed and the leader elected after it.
func outageForEveryone(t *testing.T, c cluster.Cluster, n int, d time.Duration) (time.Time, cluster.Worker) {
	t.Helper()
	p := c.Params()
	waitLeader(t, c, takeover(p))
	waitBalanced(t, c, n, settle(p)+slack)
	out := &chaos.Outage{}
	inject(t, c, out, nil)
	hold(t, d)
	for _, w := range c.Workers() {
		if st, err := w.Status(ctxFor(t, 2*time.Second)); err != nil || len(st.Shards) != 0 {
			t.Fatalf("%s still claims shards %v (err %v) %v into a storage outage", w.Identity(), st.Shards, err, d)
		}
	}
	remove(t, c, out)
	return time.Now(), waitLeader(t, c, takeover(p))
}

// shardsLeaveAfterOutage: storage is down for everyone for longer than L,
// and a follower stops gracefully as soon as the pool has its shards back,
// while every standby is still warming up after its stale view (within L of
// the heal). The standbys must take the leaver's released shards within
// P·1.1 + ε (the warm-up is for expired leases only); the bench found them
// waiting for the next assignment instead (docs/benchmarks.md §9).
func shardsLeaveAfterOutage(t *testing.T, c cluster.Cluster, n int) {
	p := c.Params()
	healed, leader := outageForEveryone(t, c, n, p.LeaseDuration+5*time.Second) // every lease expires; every view goes stale
	waitBalanced(t, c, n, settle(p)+slack)
	waitStandbys(t, c, n, settle(p)+slack)
	before := waitBalanced(t, c, n, slack)
	var leaver cluster.Worker
	for _, w := range c.Workers() {
		if w.Identity() != leader.Identity() && slices.Contains(slices.Collect(maps.Values(before)), w.Identity()) {
			leaver = w
		}
	}
	if leaver == nil {
		t.Fatalf("no follower owns a shard (%v): the leave would show nothing", before)
	}
	// A standby's warm-up starts at its first good read after the heal and
	// lasts L; a leave after that shows nothing about it.
	if since := time.Since(healed); since > p.LeaseDuration {
		t.Fatalf("the pool took %v after the heal to be balanced with standbys; the leave would come after the standbys' warm-up (L = %v)", since.Round(time.Millisecond), p.LeaseDuration)
	}
	t.Logf("%s leaves %v after the heal (the standbys warm up for L = %v after it)", leaver.Identity(), time.Since(healed).Round(time.Millisecond), p.LeaseDuration)
	departs(t, c, n, gracefulLeave(p), leaver, before)
}

// shardsRollingRestart: each worker in turn is stopped gracefully and started
// again (a new incarnation); after each step the pool is balanced again, and
// the checker judges the last step's balance.
func shardsRollingRestart(t *testing.T, c cluster.Cluster, n int) {
	p := c.Params()
	waitLeader(t, c, takeover(p))
	waitBalanced(t, c, n, settle(p)+slack)
	var last time.Time
	for _, w := range c.Workers() {
		// A shard just moved has no standby yet; the guarantee of a takeover
		// within P·1.1 + ε of a graceful release is for shards with one.
		waitStandbys(t, c, n, settle(p)+slack)
		stop := &chaos.Stop{Restart: true, Grace: (p.ShutdownGrace + 10*time.Second).Milliseconds()}
		inject(t, c, stop, w)
		remove(t, c, stop)
		last = time.Now()
		waitLeader(t, c, takeover(p))
		waitBalanced(t, c, n, settle(p)+slack)
	}
	settleAfter(t, c, last)
}

// waitStandbys waits until the leader's assignment names a standby for every
// shard, then for every worker to have read it: the view TTL, 2·(P·1.1 +
// request timeout), the bound within which each worker reads the assignment
// (this is a stated bound, not an observable event: a worker does not report
// which shards it stands by for).
func waitStandbys(t *testing.T, c cluster.Cluster, n int, timeout time.Duration) {
	t.Helper()
	p := c.Params()
	wt := waitOn(c, timeout)
	for {
		l := waitLeader(t, c, takeover(p))
		if st, err := l.Status(ctxFor(t, 2*time.Second)); err == nil && st.Assignment != nil &&
			len(st.Assignment.Standbys) == n && !slices.Contains(st.Assignment.Standbys, "") {
			break
		}
		if wt.over() {
			wt.fatal(t, "the leader's assignment did not name a standby for every shard within %v", timeout)
		}
		hold(t, 200*time.Millisecond)
	}
	hold(t, 2*(p.RetryPeriod*11/10+p.RequestTimeout()))
}

// shardsSlowMemberReads: the coordinator's reads of the members' reports are
// slow (each 0.9 × the request timeout, so none fails) and nothing else is.
// The coordinator must keep its term (the checker's keep rule) and publish
// its summaries: a pass that reads member after member spends members ×
// latency, which must not count against its progress (the watchdog).
func shardsSlowMemberReads(t *testing.T, c cluster.Cluster, n int) {
	p := c.Params()
	started := time.Now() // the workers joined just before: the pool's last membership change
	leader := waitLeader(t, c, takeover(p))
	waitBalanced(t, c, n, settle(p)+slack)
	// The shard checker's balance rule needs a quiet settle window after a
	// membership change: give it the one after the start, before the fault.
	settleAfter(t, c, started)
	was, err := leader.Status(observe(t))
	if err != nil {
		t.Fatal(err)
	}
	slow := &chaos.SlowReads{Prefix: c.LockBlob() + "-shards/reports/", Delay: (p.RequestTimeout() * 9 / 10).Milliseconds()}
	inject(t, c, slow, leader)
	// Three summaries (every 5·P), each reading every member's report.
	end := time.Now().Add(3*5*p.RetryPeriod + 5*time.Second)
	for time.Now().Before(end) {
		st, err := leader.Status(ctxFor(t, 5*time.Second))
		if err == nil && (st.Role != "leader" || st.Term != was.Term) {
			t.Errorf("%s left term %d (now %s of term %d) while only its member reads were slow", leader.Identity(), was.Term, st.Role, st.Term)
			break
		}
		hold(t, 250*time.Millisecond)
	}
	if err := slow.AwaitSlowed(ctxFor(t, slack), len(c.Workers())); err != nil {
		t.Errorf("the fault slowed %d report reads, want at least %d (one summary): it missed (%v)", slow.Slowed(), len(c.Workers()), err)
	}
	t.Logf("%d report reads slowed by %d ms each", slow.Slowed(), slow.Delay)
	remove(t, c, slow)
}
